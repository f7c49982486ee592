package resilience

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redstate/redstate/internal/rediserr"
	"github.com/redstate/redstate/metrics"
)

// logLines is a JSON log sink at Info level; lines returns what was logged.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logLines) lines(t *testing.T) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// TestBreaker_LogsAnOutageOnceNotPerCall: 1,000 calls refused over 25 seconds of an outage log
// four lines: the opening with its cause, a summary after 10 and after 20 seconds with the
// calls refused since the last line, and the closing with the outage's length and every call
// refused.
func TestBreaker_LogsAnOutageOnceNotPerCall(t *testing.T) {
	sink := &logLines{}
	log := slog.New(slog.NewJSONHandler(sink, &slog.HandlerOptions{Level: slog.LevelInfo}))
	b, err := NewBreaker("buildstatus", Options{BreakerConfig: BreakerConfig{WaitDurationInOpenState: time.Hour}}, metrics.New(), log)
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b.now = func() time.Time { return clock }
	openWith(t, b, rediserr.Map(refused(), "save"))
	const refusedCalls = 1000
	for range refusedCalls {
		clock = clock.Add(25 * time.Millisecond)
		if called, err := call(b, nil); called || !IsRefused(err) {
			t.Fatalf("call while open: called %v, err %v", called, err)
		}
	}
	b.cb.HalfOpen()
	for range 6 {
		call(b, nil)
	}
	if b.State() != metrics.BreakerClosed {
		t.Fatalf("state = %s after 6 successful trials, want closed", b.State())
	}

	lines := sink.lines(t)
	if len(lines) != 4 {
		t.Fatalf("%d log lines for an outage with %d refused calls, want 4 (open, 2 summaries, closed):\n%s", len(lines), refusedCalls, &sink.buf)
	}
	open, first, second, closed := lines[0], lines[1], lines[2], lines[3]
	if open["level"] != "WARN" || !strings.Contains(open["msg"].(string), "breaker open") || !strings.Contains(open["cause"].(string), "connection refused") {
		t.Errorf("first line %v, want a Warn that the breaker opened, with the refused connection as cause", open)
	}
	for i, s := range []map[string]any{first, second} {
		if s["level"] != "WARN" || s["msg"] != "redis circuit breaker still open" || s["refused"] != float64(400) {
			t.Errorf("summary %d: %v, want a Warn with 400 calls refused (10 s at 25 ms)", i+1, s)
		}
	}
	if second["refusedTotal"] != float64(800) {
		t.Errorf("second summary refusedTotal %v, want 800", second["refusedTotal"])
	}
	if closed["level"] != "INFO" || closed["refused"] != float64(refusedCalls) || closed["outage"] != float64(25*time.Second) {
		t.Errorf("last line %v, want an Info that the breaker closed after 25s with %d calls refused", closed, refusedCalls)
	}
}
