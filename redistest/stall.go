package redistest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/redisconn"
)

// ResendReadTimeout is the read timeout of ResendClient: how long a command sent to a stalled
// server waits before go-redis gives up on it and sends it again.
const ResendReadTimeout = time.Second

// resendPool is how many idle connections ResendClient opens: a re-sent command then finds
// one at once instead of dialing.
const resendPool = 4

// ResendClient returns the product client (redisconn.New, redis.max-retries 1) of the server
// with ResendReadTimeout and resendPool idle connections, closed in t.Cleanup. RunStalled stalls
// the server when this client sends the command it waits for.
func (s *Server) ResendClient(t testing.TB) *redis.Client {
	t.Helper()
	o := redisconn.DefaultOptions()
	o.URL = s.URL
	o.ReadTimeout = ResendReadTimeout
	o.MaxRetries = 1
	uc, err := redisconn.New(o)
	if err != nil {
		t.Fatalf("redistest: client of %s: %v", s.Addr, err)
	}
	c := uc.(*redis.Client)
	t.Cleanup(func() { _ = c.Close() })
	conns := make([]*redis.Conn, resendPool)
	deadline := time.Now().Add(readyTimeout)
	for i := range conns {
		// A loaded machine may answer a fresh connection later than the short read timeout:
		// try again on another one.
		for {
			conns[i] = c.Conn()
			err := conns[i].Ping(context.Background()).Err()
			if err == nil {
				break
			}
			_ = conns[i].Close()
			if time.Now().After(deadline) {
				t.Fatalf("redistest: client of %s: %v", s.Addr, err)
			}
		}
	}
	for _, conn := range conns {
		_ = conn.Close()
	}
	c.AddHook(stallHook{s})
	return c
}

// Named returns the RunStalled trigger matching the commands named name (lower case, e.g.
// "evalsha", "lpush").
func Named(name string) func(redis.Cmder) bool {
	return func(c redis.Cmder) bool { return c.Name() == name }
}

// stall is one RunStalled in progress.
type stall struct {
	trigger func(redis.Cmder) bool
	fired   atomic.Bool
	paused  chan struct{} // closed once the server is stopped (or stopping it failed)
	// Set before paused is closed: the connections that held input before the command was
	// sent, and why the server could not be stopped.
	before int
	err    error
}

// stallHook stops the server (SIGSTOP) before a ResendClient sends the command an armed
// RunStalled waits for. Hooks run around go-redis's retry loop, so it fires once per call.
type stallHook struct{ s *Server }

func (h stallHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h stallHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.s.maybeStall(cmd)
		return next(ctx, cmd)
	}
}

func (h stallHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			h.s.maybeStall(cmd)
		}
		return next(ctx, cmds)
	}
}

// maybeStall stops the server if cmd is the first command the armed RunStalled waits for.
func (s *Server) maybeStall(cmd redis.Cmder) {
	st := s.stall.Load()
	if st == nil || !st.trigger(cmd) || !st.fired.CompareAndSwap(false, true) {
		return
	}
	st.before = pendingInputs(s.port)
	if st.err = s.sendRunning(syscall.SIGSTOP); st.err == nil {
		st.err = waitStopped(s.pid())
	}
	close(st.paused)
}

// RunStalled runs op, stopping the server (SIGSTOP: it keeps its connections and their input
// but runs nothing) just before a ResendClient of it sends the first command trigger matches,
// and continuing it (SIGCONT) once two connections hold input for it: the command and the copy
// go-redis sends on another connection after ResendReadTimeout. Both run when the server
// continues, in that order, and the copy is answered in time. If op returns first (a command
// that go-redis does not re-send, such as MULTI … EXEC), the server continues then.
//
// It returns how many commands named in cmds (any case) clients sent the server during op, as
// MONITOR shows them (commands that scripts call are not counted): 2 where op sends one
// command that was re-sent. Tests assert that count, which proves the re-send happened,
// beside the exactly-once effect they check. op runs on the calling goroutine. Nothing else may
// send cmds to the server meanwhile.
func (s *Server) RunStalled(t testing.TB, trigger func(redis.Cmder) bool, op func(), cmds ...string) int {
	t.Helper()
	mon := s.monitor(t)
	defer mon.conn.Close()
	st := &stall{trigger: trigger, paused: make(chan struct{})}
	s.stall.Store(st)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-st.paused:
		case <-done:
			return
		}
		s.awaitCopies(st.before+2, done)
		_ = s.sendRunning(syscall.SIGCONT)
	}()
	op()
	close(done)
	wg.Wait()
	s.stall.Store(nil)
	if !st.fired.Load() {
		t.Fatalf("redistest: op sent no command the stall was waiting for")
	}
	if st.err != nil {
		t.Fatalf("redistest: stalling %s: %v", s.Addr, st.err)
	}
	return mon.count(t, cmds)
}

// awaitCopies returns once n connections hold input for the server (a command and its copy
// beside those that held some before), or done is closed.
func (s *Server) awaitCopies(n int, done <-chan struct{}) {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for pendingInputs(s.port) < n {
		select {
		case <-done:
			return
		case <-tick.C:
		}
	}
}

// pid returns the server's process id, 0 when it is not running.
func (s *Server) pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return 0
	}
	return s.proc.cmd.Process.Pid
}

// monitor is a MONITOR connection.
type monitor struct {
	s    *Server
	conn net.Conn
	r    *bufio.Reader
}

// monitor opens a MONITOR connection to the server.
func (s *Server) monitor(t testing.TB) *monitor {
	t.Helper()
	conn, err := net.DialTimeout("tcp", s.Addr, probeTimeout)
	if err != nil {
		t.Fatalf("redistest: monitor %s: %v", s.Addr, err)
	}
	m := &monitor{s: s, conn: conn, r: bufio.NewReader(conn)}
	_ = conn.SetDeadline(time.Now().Add(readyTimeout))
	if _, err := io.WriteString(conn, "*1\r\n$7\r\nMONITOR\r\n"); err != nil {
		_ = conn.Close()
		t.Fatalf("redistest: monitor %s: %v", s.Addr, err)
	}
	if v, err := readReply(m.r); err != nil || v != "OK" {
		_ = conn.Close()
		t.Fatalf("redistest: MONITOR on %s answered %v, %v", s.Addr, v, err)
	}
	return m
}

// count sends an end mark (ECHO of a unique string) and counts the client commands named in
// cmds that the monitor saw before it.
func (m *monitor) count(t testing.TB, cmds []string) int {
	t.Helper()
	end := fmt.Sprintf("redistest-monitor-end-%d", time.Now().UnixNano())
	if _, err := command(m.s.Addr, readyTimeout, "ECHO", end); err != nil {
		t.Fatalf("redistest: monitor end mark on %s: %v", m.s.Addr, err)
	}
	_ = m.conn.SetDeadline(time.Now().Add(readyTimeout))
	n := 0
	for {
		v, err := readReply(m.r)
		if err != nil {
			t.Fatalf("redistest: reading MONITOR of %s: %v", m.s.Addr, err)
		}
		line, _ := v.(string)
		// A line is `<time> [<db> <client address, or "lua">] "<COMMAND>" "<arg>" …`.
		_, rest, _ := strings.Cut(line, " [")
		client, rest, _ := strings.Cut(rest, "] ")
		name, _, _ := strings.Cut(strings.TrimPrefix(rest, `"`), `"`)
		if strings.EqualFold(name, "echo") && strings.Contains(rest, end) {
			return n
		}
		if strings.HasSuffix(client, " lua") {
			continue
		}
		for _, c := range cmds {
			if strings.EqualFold(name, c) {
				n++
			}
		}
	}
}
