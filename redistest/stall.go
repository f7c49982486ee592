package redistest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// WithDebugCommand enables the DEBUG command for connections from loopback
// ("enable-debug-command local"), which Stall needs.
func WithDebugCommand() Option { return WithConfig("enable-debug-command", "local") }

// Stall makes the server stop serving for d: it sends DEBUG SLEEP on a connection of its own
// and returns at once, while the server sleeps. Commands that other connections send meanwhile
// wait in their sockets and run, in arrival order, when it wakes; a connection that a client
// closed in between still gets its commands run. The returned function waits until the server
// answered the DEBUG SLEEP (it is awake again). The server must run WithDebugCommand.
func (s *Server) Stall(t testing.TB, d time.Duration) (awake func()) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", s.Addr, probeTimeout)
	if err != nil {
		t.Fatalf("redistest: stall %s: %v", s.Addr, err)
	}
	r := bufio.NewReader(conn)
	// A PING answered first proves the server accepted the connection: the DEBUG SLEEP written
	// next is then read in the server's next event-loop turn, ahead of any command written
	// after it, rather than one turn later (accept, then read) behind them.
	_ = conn.SetDeadline(time.Now().Add(probeTimeout))
	if _, err := io.WriteString(conn, "*1\r\n$4\r\nPING\r\n"); err != nil {
		_ = conn.Close()
		t.Fatalf("redistest: stall %s: %v", s.Addr, err)
	}
	if v, err := readReply(r); err != nil || v != "PONG" {
		_ = conn.Close()
		t.Fatalf("redistest: stall %s: PING answered %v, %v", s.Addr, v, err)
	}
	secs := strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
	req := fmt.Sprintf("*3\r\n$5\r\nDEBUG\r\n$5\r\nSLEEP\r\n$%d\r\n%s\r\n", len(secs), secs)
	if _, err := io.WriteString(conn, req); err != nil {
		_ = conn.Close()
		t.Fatalf("redistest: stall %s: %v", s.Addr, err)
	}
	return func() {
		t.Helper()
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(d + readyTimeout))
		if v, err := readReply(r); err != nil || v != "OK" {
			t.Fatalf("redistest: DEBUG SLEEP on %s answered %v, %v (is the server started WithDebugCommand?)", s.Addr, v, err)
		}
	}
}

// ResendStall is how long RunStalled makes the server sleep: longer than ResendReadTimeout,
// so that a command sent at its start times out and is re-sent, and shorter than twice it, so
// that the re-sent copy, sent about one read timeout later, is answered in time.
const ResendStall = 300 * time.Millisecond

// ResendReadTimeout is the client read timeout that RunStalled's stall provokes a re-send
// with (redis.read-timeout in the client under test, with redis.max-retries 1).
const ResendReadTimeout = 200 * time.Millisecond

// RunStalled runs op while the server stalls for ResendStall, and returns how many commands
// named in cmds (any case: "evalsha", "LPUSH", …) clients sent meanwhile, as MONITOR shows them:
// commands that scripts call are not counted. With op's client at ResendReadTimeout and one
// retry, the first copy of op's command times out and go-redis sends it again on another
// connection: both run when the server wakes, so the count is 2 where op sends one command.
// Tests assert that count, which proves the re-send happened, beside the exactly-once effect
// they check. op runs on the calling goroutine; RunStalled returns once op returned and the
// server is awake. Nothing else may send cmds to the server meanwhile.
func (s *Server) RunStalled(t testing.TB, op func(), cmds ...string) int {
	t.Helper()
	mon := s.monitor(t)
	defer mon.conn.Close()
	awake := s.Stall(t, ResendStall)
	op()
	awake()
	return mon.count(t, cmds)
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
	_ = conn.SetDeadline(time.Now().Add(probeTimeout))
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
	if _, err := command(m.s.Addr, probeTimeout, "ECHO", end); err != nil {
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
