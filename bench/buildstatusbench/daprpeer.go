package buildstatusbench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/bench"
)

// The Dapr peer is the program in bench/peers/daprstate, a Go module of its own (Dapr's
// components-contrib builds only with an older go-redis than redstate's). The bench builds it
// with the go command, starts it, and talks to it over its stdin and stdout, one JSON object a
// line: a setup, then one request per timed slice.

// daprSetup is the peer's setup line (its main.go's setup).
type daprSetup struct {
	Addr       string   `json:"addr"`
	Username   string   `json:"username,omitempty"`
	Password   string   `json:"password,omitempty"`
	DB         int      `json:"db"`
	Clients    int      `json:"clients"`
	TTLSeconds int      `json:"ttl_seconds"`
	Keys       []string `json:"keys"`
	Docs       []string `json:"docs"`
}

// daprResult is the peer's answer to a run request.
type daprResult struct {
	Ready      bool    `json:"ready"`
	Error      string  `json:"error"`
	Ops        int64   `json:"ops"`
	CPUNS      int64   `json:"cpu_ns"`
	Errors     int64   `json:"errors"`
	FirstError string  `json:"first_error"`
	ElapsedNS  int64   `json:"elapsed_ns"`
	Latencies  []int64 `json:"latencies_ns"`
}

// errNoDaprPeer: no peer was given and its source is not where this binary was built from.
var errNoDaprPeer = errors.New("no Dapr peer: the source of bench/peers/daprstate is not beside this binary; pass its module directory or a built binary (--dapr-peer)")

// daprPeer is a running peer process.
type daprPeer struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *json.Decoder
	stderr *tailBuffer
	dir    string // the temporary directory of the built binary ("" for a given binary)
}

// DefaultDaprPeer returns the directory of the peer's module in this source tree
// (bench/peers/daprstate), found from this file's path; "" when the source is not there.
func DefaultDaprPeer() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return ""
	}
	dir := filepath.Join(filepath.Dir(file), "..", "peers", "daprstate")
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		return ""
	}
	return dir
}

// daprAddr returns the standalone server's connection settings for the peer, or an error for
// a client the peer cannot follow (Cluster, Sentinel failover).
func daprAddr(c redis.UniversalClient) (daprSetup, error) {
	rc, ok := c.(*redis.Client)
	if !ok {
		return daprSetup{}, errors.New("the Dapr peer runs on a standalone server only")
	}
	o := rc.Options()
	if o.Network != "" && o.Network != "tcp" || o.TLSConfig != nil || o.Addr == "FailoverClient" {
		return daprSetup{}, errors.New("the Dapr peer runs on a plain TCP standalone server only")
	}
	return daprSetup{Addr: o.Addr, Username: o.Username, Password: o.Password, DB: o.DB}, nil
}

// startDaprPeer builds the peer (path is its module directory) or takes path as a built
// binary, starts it and sends it setup; it returns once the peer's store is initialised.
func startDaprPeer(ctx context.Context, path string, setup daprSetup, progress func(string, ...any)) (*daprPeer, error) {
	if path == "" {
		return nil, errNoDaprPeer
	}
	p := &daprPeer{stderr: &tailBuffer{max: 4096}}
	bin := path
	if st, err := os.Stat(path); err != nil {
		return nil, err
	} else if st.IsDir() {
		if p.dir, err = os.MkdirTemp("", "daprstate-"); err != nil {
			return nil, err
		}
		bin = filepath.Join(p.dir, "daprstate")
		progress("building the Dapr peer in %s\n", path)
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
		build.Dir = path
		if out, err := build.CombinedOutput(); err != nil {
			p.close()
			return nil, fmt.Errorf("building the Dapr peer: %w\n%s", err, out)
		}
	}
	p.cmd = exec.Command(bin)
	p.cmd.Stderr = p.stderr
	stdin, err := p.cmd.StdinPipe()
	if err != nil {
		p.close()
		return nil, err
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		p.close()
		return nil, err
	}
	p.stdin, p.out = stdin, json.NewDecoder(bufio.NewReader(stdout))
	if err := p.cmd.Start(); err != nil {
		p.close()
		return nil, err
	}
	var ready daprResult
	if err := p.call(setup, &ready); err != nil {
		p.close()
		return nil, err
	}
	if !ready.Ready {
		p.close()
		return nil, fmt.Errorf("the Dapr peer did not start: %s", ready.Error)
	}
	return p, nil
}

// call sends req and reads the answer into res.
func (p *daprPeer) call(req any, res *daprResult) error {
	if err := json.NewEncoder(p.stdin).Encode(req); err != nil {
		return fmt.Errorf("writing to the Dapr peer: %w (stderr: %s)", err, p.stderr)
	}
	if err := p.out.Decode(res); err != nil {
		return fmt.Errorf("reading the Dapr peer: %w (stderr: %s)", err, p.stderr)
	}
	if res.Error != "" {
		return fmt.Errorf("the Dapr peer: %s", res.Error)
	}
	return nil
}

// run has the peer's writers save for d and returns their result under name and the CPU time
// the peer used.
func (p *daprPeer) run(name string, d time.Duration) (*bench.Result, time.Duration, error) {
	var res daprResult
	if err := p.call(map[string]int64{"run_ms": d.Milliseconds()}, &res); err != nil {
		return nil, 0, err
	}
	r := &bench.Result{Name: name, Ops: res.Ops, Errors: res.Errors, Elapsed: time.Duration(res.ElapsedNS)}
	if res.FirstError != "" {
		r.FirstErr = errors.New(res.FirstError)
	}
	r.Latencies = make([]time.Duration, len(res.Latencies))
	for i, ns := range res.Latencies {
		r.Latencies[i] = time.Duration(ns)
	}
	slices.Sort(r.Latencies)
	return r, time.Duration(res.CPUNS), nil
}

// close ends the peer (end of its stdin), waits for it and removes the built binary.
func (p *daprPeer) close() {
	if p.stdin != nil {
		_ = p.stdin.Close()
	}
	if p.cmd != nil && p.cmd.Process != nil {
		done := make(chan struct{})
		go func() { _ = p.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-done
		}
	}
	if p.dir != "" {
		_ = os.RemoveAll(p.dir)
	}
}

// tailBuffer keeps the last max bytes written to it (the peer's stderr, for errors).
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	return len(b), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
