package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/buildstatus/memstore"
	"github.com/redstate/redstate/buildstatus/resilientstore"
	"github.com/redstate/redstate/internal/rediserr"
	"github.com/redstate/redstate/internal/resilience"
	"github.com/redstate/redstate/metrics"
)

// switchedStore is a build store whose "Redis" can be turned off: while down, saves fail as a
// refused connection does.
type switchedStore struct {
	buildstatus.Store
	down atomic.Bool
}

// errRefused is the error of a call to a Redis that is gone.
func errRefused(op string) error {
	return rediserr.Map(&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", errors.New("connection refused"))}, op)
}

func (s *switchedStore) Save(ctx context.Context, doc *buildstatus.PublishResponse, opts buildstatus.SaveOptions) (*buildstatus.Build, error) {
	if s.down.Load() {
		return nil, errRefused("save")
	}
	return s.Store.Save(ctx, doc, opts)
}

// ping is the breaker's probe of this "Redis".
func (s *switchedStore) ping(context.Context) error {
	if s.down.Load() {
		return errRefused("ping")
	}
	return nil
}

// jsonLines is a concurrency-safe JSON log sink.
type jsonLines struct{ syncWriter }

// since returns the lines logged after the first n.
func (l *jsonLines) since(t *testing.T, n int) []map[string]any {
	t.Helper()
	var out []map[string]any
	for i, line := range strings.Split(strings.TrimSpace(l.String()), "\n") {
		if i < n || line == "" {
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

// count returns how many lines were logged.
func (l *jsonLines) count() int {
	s := strings.TrimSpace(l.String())
	if s == "" {
		return 0
	}
	return strings.Count(s, "\n") + 1
}

// TestRefusedRequests_LogTheOutageNotEachRequest: the server and the build store share one
// Info-level logger, as in serve. While the breaker is open, 200 refused PUTs (503) log
// nothing; the outage is logged when the breaker opens (one line per failed call before it,
// carrying its error) and when it closes (with the calls refused). Before the fix every refused
// request logged two lines ("store unavailable" and an ERROR "http request").
func TestRefusedRequests_LogTheOutageNotEachRequest(t *testing.T) {
	sink := &jsonLines{syncWriter{w: &bytes.Buffer{}}}
	log := slog.New(slog.NewJSONHandler(sink, &slog.HandlerOptions{Level: slog.LevelInfo}))
	mem := memstore.New(memstore.Options{TTL: time.Hour})
	t.Cleanup(func() { _ = mem.Close() })
	redis := &switchedStore{Store: mem}
	store, err := resilientstore.New(redis, nil, resilience.Options{BreakerConfig: resilience.BreakerConfig{WaitDurationInOpenState: time.Hour, ProbeInterval: time.Millisecond}},
		metrics.New(), log, resilience.WithProbe(redis.ping))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	a := newTestAPI(t, func(c *Config, d *Deps) { c.Logger, d.Builds = log, store })
	put := func() int {
		id := uuid.NewString()
		return a.do("PUT", "/v1/builds/"+id, docJSON(id, "outage")).status
	}

	redis.down.Store(true)
	for range 5 { // 5 of the last 10 calls failed: the breaker opens
		if got := put(); got != http.StatusServiceUnavailable {
			t.Fatalf("PUT with Redis down: %d, want 503", got)
		}
	}
	if st := store.BreakerState(); st != metrics.BreakerOpen {
		t.Fatalf("breaker %s after 5 failures, want open", st)
	}
	opening := sink.since(t, 0)
	if len(opening) != 6 {
		t.Errorf("%d lines for 5 failed requests and the opening, want 6 (one per request, one for the opening):\n%s", len(opening), sink.String())
	}
	mark := sink.count()
	const refused = 200
	for range refused {
		if got := put(); got != http.StatusServiceUnavailable {
			t.Fatalf("PUT with the breaker open: %d, want 503", got)
		}
	}
	if lines := sink.since(t, mark); len(lines) != 0 {
		t.Fatalf("%d lines for %d refused requests, want none (the outage is logged by the breaker):\n%v", len(lines), refused, lines)
	}

	redis.down.Store(false)
	// The probe closes the breaker in the background; its closing line follows the state change.
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(sink.String(), "redis circuit breaker closed") {
		if time.Now().After(deadline) {
			t.Fatalf("breaker %s 30s after Redis answered again, want closed and logged", store.BreakerState())
		}
		time.Sleep(time.Millisecond)
	}
	if got := put(); got != http.StatusOK {
		t.Fatalf("PUT after the breaker closed: %d", got)
	}
	lines := sink.since(t, mark)
	if len(lines) != 2 {
		t.Fatalf("%d lines after the outage, want 2 (the closing, the successful request):\n%v", len(lines), lines)
	}
	if closed := lines[0]; !strings.Contains(closed["msg"].(string), "breaker closed") || closed["refused"] != float64(refused) {
		t.Errorf("closing line %v, want the breaker closed with %d refused calls", closed, refused)
	}
}
