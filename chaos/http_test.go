//go:build chaos

package chaos

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/buildstatus/storetest"
)

// HTTP load: the real binary's `serve`, built by its composition root on the run's topology
// with its default settings (fail-fast build status behind the breaker and its probe, the
// queues, executor, index and feed), and httpWriters clients saving builds through
// PUT /v1/builds/{id}, each re-saving httpIDsPerWriter builds with a version counting up (in
// estimatedTime). It measures what a client of serve sees: the time from the fault to the
// first 2xx after the last failure (through the server's circuit breaker, unlike the other
// blocks, which call the stores directly), the time from the promotion to that 2xx, the 503s,
// and the lines serve logged at Warn and above meanwhile.
const (
	httpWriters      = 4
	httpIDsPerWriter = 25
	httpPause        = 5 * time.Millisecond
	httpTimeout      = 3 * time.Second
)

// httpBlock is `serve` under load over HTTP.
var httpBlock = block{name: "http", setup: func(t *testing.T, r *run) func(int) load {
	s := startServe(t, r)
	return func(int) load { return &httpLoad{serve: s, run: r, acked: map[string]int64{}} }
}}

// binDir holds the redstate binary serveBinary builds; TestMain removes it.
var binDir string

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// serveBinary is the redstate binary, built once per test process (without the race detector:
// the timings are a production binary's).
var serveBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "redstate-chaos-")
	if err != nil {
		return "", err
	}
	binDir = dir
	bin := filepath.Join(dir, "redstate")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/redstate").CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// serveProc is one running `redstate serve` and the lines it logged.
type serveProc struct {
	base   string
	client *http.Client

	mu    sync.Mutex
	lines []logLine
}

// logLine is one JSON log line of serve.
type logLine struct {
	at    time.Time
	level string
	msg   string
	block string
	raw   string
}

// startServe runs `redstate serve` on r's topology (wait-replicas 1 in mode wait1), its keys
// under their own namespace, and returns once it listens; it is killed in t.Cleanup.
func startServe(t *testing.T, r *run) *serveProc {
	t.Helper()
	bin, err := serveBinary()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"serve", "--addr", "127.0.0.1:0", "--log-format", "json", "--data-dir", t.TempDir(), "--namespace", "chaos-http-"}
	o := r.topo.options()
	switch {
	case len(o.ClusterAddrs) > 0:
		args = append(args, "--redis-cluster", strings.Join(o.ClusterAddrs, ","))
	default:
		args = append(args, "--redis-sentinel-master", o.Sentinel.MasterName, "--redis-sentinel", strings.Join(o.Sentinel.Addrs, ","))
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = os.Environ()
	if r.mode == "wait1" {
		cmd.Env = append(cmd.Env, "REDSTATE_REDIS_DURABILITY_WAIT_REPLICAS=1")
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &serveProc{client: &http.Client{Timeout: httpTimeout, Transport: &http.Transport{MaxIdleConnsPerHost: httpWriters * 2}}}
	addr := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.read(out, addr)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		_ = cmd.Wait()
	})
	select {
	case a := <-addr:
		s.base = "http://" + a
	case <-done:
		t.Fatalf("redstate serve exited before listening:\n%s", s.tail(40))
	case <-time.After(60 * time.Second):
		t.Fatalf("redstate serve did not listen within 60s:\n%s", s.tail(40))
	}
	return s
}

// read records serve's log lines and sends the listen address once logged.
func (s *serveProc) read(r io.Reader, addr chan<- string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		var e struct {
			Time  time.Time `json:"time"`
			Level string    `json:"level"`
			Msg   string    `json:"msg"`
			Addr  string    `json:"addr"`
			Block string    `json:"block"`
		}
		line := logLine{at: time.Now(), level: "?", msg: sc.Text(), raw: sc.Text()}
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			line = logLine{at: e.Time, level: e.Level, msg: e.Msg, block: e.Block, raw: sc.Text()}
			if e.Addr != "" && strings.HasPrefix(e.Msg, "listening on") {
				select {
				case addr <- e.Addr:
				default:
				}
			}
		}
		s.mu.Lock()
		s.lines = append(s.lines, line)
		s.mu.Unlock()
	}
}

// tail returns the last n log lines, for a failure message.
func (s *serveProc) tail(n int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for _, l := range s.lines[max(0, len(s.lines)-n):] {
		fmt.Fprintf(&b, "%s %s %s\n", l.at.Format(time.RFC3339Nano), l.level, l.msg)
	}
	return b.String()
}

// outageLog is what serve logged from a fault on.
type outageLog struct {
	// warn and errs count the lines at Warn and above, and at Error; msgs counts each of their
	// messages.
	warn, errs int
	msgs       map[string]int
	// errors are the first maxErrorLines Error lines, whole; breaker the build-status
	// breaker's first maxErrorLines outage lines.
	errors, breaker []string
	// opened and closed are when the build-status breaker first opened and last closed;
	// switched is when go-redis last heard of a new Sentinel master (zero: never).
	opened, closed, switched time.Time
}

// maxErrorLines bounds the Error lines an outageLog keeps.
const maxErrorLines = 5

// logSince returns what serve logged since from.
func (s *serveProc) logSince(from time.Time) outageLog {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := outageLog{msgs: map[string]int{}}
	for _, l := range s.lines {
		if l.at.Before(from) {
			continue
		}
		switch l.level {
		case "ERROR":
			o.errs++
			if len(o.errors) < maxErrorLines {
				o.errors = append(o.errors, l.raw)
			}
			fallthrough
		case "WARN":
			o.warn++
			o.msgs[l.level+" "+l.msg]++
		}
		if l.block == buildstatus.Block && strings.HasPrefix(l.msg, "redis circuit breaker") && len(o.breaker) < maxErrorLines {
			o.breaker = append(o.breaker, l.raw)
		}
		switch {
		case strings.HasPrefix(l.msg, "sentinel: new master"):
			o.switched = l.at
		case l.block != buildstatus.Block:
		case strings.HasPrefix(l.msg, "redis circuit breaker open") && o.opened.IsZero():
			o.opened = l.at
		case strings.HasPrefix(l.msg, "redis circuit breaker closed"):
			o.closed = l.at
		}
	}
	return o
}

// httpLoad is the HTTP load model of one phase: the last version each build's PUT acknowledged.
type httpLoad struct {
	serve *serveProc
	run   *run
	log   opLog

	mu    sync.Mutex
	acked map[string]int64
}

// start runs the writers until produce ends; there are no background workers.
func (h *httpLoad) start(produce, _ context.Context, producers, _ *sync.WaitGroup) {
	for range httpWriters {
		ids := make([]string, httpIDsPerWriter)
		for i := range ids {
			ids[i] = storetest.NewBuildID()
		}
		producers.Add(1)
		go func() {
			defer producers.Done()
			version := map[string]int64{}
			for i := 0; produce.Err() == nil; i++ {
				id := ids[i%len(ids)]
				version[id]++
				v := version[id]
				err := h.put(produce, id, v)
				if produce.Err() != nil {
					return // the outcome of a request cut short by the end of the phase is unknown
				}
				h.log.add(err)
				if err == nil {
					h.mu.Lock()
					h.acked[id] = v
					h.mu.Unlock()
				}
				time.Sleep(httpPause)
			}
		}()
	}
}

// put saves version v of build id through the API; an answer other than 2xx is an error.
func (h *httpLoad) put(ctx context.Context, id string, v int64) error {
	doc := storetest.SampleDoc(id, "chaos-http")
	doc.EstimatedTime = &v
	body, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, h.serve.base+"/v1/builds/"+id, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.serve.client.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("PUT %s: %d %s", id, resp.StatusCode, msg)
	}
	return nil
}

// settle waits, when no PUT succeeded after the last failure, until one does (bounded by
// failoverTimeout): serve's breaker can stay open past the phase (its full wait, after
// failures its probe does not see), and the recovery is measured to that first 2xx.
func (h *httpLoad) settle(*testing.T) {
	deadline := time.Now().Add(failoverTimeout)
	for {
		if _, ok := h.log.recovery(time.Time{}); ok || time.Now().After(deadline) {
			return
		}
		id := storetest.NewBuildID()
		err := h.put(context.Background(), id, 1)
		h.log.add(err)
		if err == nil {
			h.mu.Lock()
			h.acked[id] = 1
			h.mu.Unlock()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// rows checks every acknowledged build through GET and returns the phase's row, with the
// recovery as a client of serve saw it and serve's log lines since the fault.
func (h *httpLoad) rows(t *testing.T, faultAt time.Time) []row {
	r := newRow("http buildstatus save")
	r.acked, r.failed = h.log.counts()
	r.lost, r.stale = h.check(t)
	r.recovery = recovered(t, &h.log, faultAt, r.block)
	if !h.run.promotedAt.IsZero() {
		r.promoted = h.run.promotedAt.Sub(faultAt)
	}
	o := h.serve.logSince(faultAt)
	r.warnLines, r.errorLines = o.warn, o.errs
	t.Logf("http: after the fault: promotion seen %s, serve's client told of the new master %s, breaker opened %s and closed %s, first 2xx %s; %d 503s, %d lines ≥ Warn (%d Error): %v; Error lines: %s",
		since(faultAt, h.run.promotedAt), since(faultAt, o.switched), since(faultAt, o.opened), since(faultAt, o.closed), r.recovery.Round(time.Millisecond),
		r.failed, r.warnLines, r.errorLines, o.msgs, strings.Join(o.errors, "\n"))
	t.Logf("http: the build-status breaker's first outage lines:\n%s", strings.Join(o.breaker, "\n"))
	return []row{r}
}

// since prints how long after from at was ("–" for a zero at).
func since(from, at time.Time) string {
	if at.IsZero() {
		return "–"
	}
	return at.Sub(from).Round(time.Millisecond).String()
}

// check reads every acknowledged build back through GET and returns how many are missing and
// how many hold an older version than the last acknowledged one.
func (h *httpLoad) check(t *testing.T) (lost, stale int) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	for id, want := range h.acked {
		got, err := h.version(id)
		if err != nil {
			t.Fatalf("read back build %s over HTTP: %v", id, err)
		}
		switch {
		case got == 0:
			lost++
		case got < want:
			stale++
		}
	}
	return lost, stale
}

// version returns the stored version of build id through GET (0 when it does not exist),
// retrying other answers for a while.
func (h *httpLoad) version(id string) (int64, error) {
	deadline := time.Now().Add(failoverTimeout)
	for {
		v, err := h.get(id)
		if err == nil {
			return v, nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("still failing after %v: %w", failoverTimeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// get is one GET of build id: its version, 0 on 404.
func (h *httpLoad) get(id string) (int64, error) {
	resp, err := h.serve.client.Get(h.serve.base + "/v1/builds/" + id)
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	switch {
	case err != nil:
		return 0, err
	case resp.StatusCode == http.StatusNotFound:
		return 0, nil
	case resp.StatusCode != http.StatusOK:
		return 0, fmt.Errorf("GET %s: %d %s", id, resp.StatusCode, body)
	}
	var doc buildstatus.PublishResponse
	if err := json.Unmarshal(body, &doc); err != nil {
		return 0, err
	}
	if doc.EstimatedTime == nil {
		return 0, fmt.Errorf("build %s has no estimatedTime", id)
	}
	return *doc.EstimatedTime, nil
}
