package httpapi

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/redstate/redstate/config"
)

// openStream opens an event stream with token and returns its status; the stream stays open
// until ctx ends.
func (a *testAPI) openStream(ctx context.Context, id, token string) int {
	a.t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", a.srv.URL+"/v1/builds/"+id+"/events", nil)
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := a.srv.Client().Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		_ = res.Body.Close()
	} else {
		go func() { <-ctx.Done(); _ = res.Body.Close() }()
	}
	return res.StatusCode
}

func TestEvents_StreamsBoundedGloballyAndPerToken(t *testing.T) {
	a := newTestAPI(t, func(c *Config, _ *Deps) {
		c.Tokens = []config.Token{
			{Name: "a", Token: "token-a-0123456789", Roles: []string{"read"}},
			{Name: "b", Token: "token-b-0123456789", Roles: []string{"read"}},
		}
		c.MaxEventStreams, c.MaxEventStreamsPerClient = 3, 2
	})
	gaugeNamed := func(name string) float64 {
		mfs, err := a.reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == name {
				return mf.GetMetric()[0].GetGauge().GetValue()
			}
		}
		t.Fatalf("no %s gauge", name)
		return 0
	}
	gauge := func() float64 { return gaugeNamed("redstate_http_event_streams") }
	if limit := gaugeNamed("redstate_http_event_streams_limit"); limit != 3 {
		t.Errorf("redstate_http_event_streams_limit = %v, want server.max-event-streams 3", limit)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	for range 2 {
		if st := a.openStream(ctx, buildA, "token-a-0123456789"); st != 200 {
			t.Fatalf("stream of token a: %d", st)
		}
	}
	if st := a.openStream(ctx, buildA, "token-a-0123456789"); st != http.StatusTooManyRequests {
		t.Fatalf("third stream of token a: %d, want 429", st)
	}
	ctxB, cancelB := context.WithCancel(ctx)
	if st := a.openStream(ctxB, buildB, "token-b-0123456789"); st != 200 {
		t.Fatalf("first stream of token b: %d", st)
	}
	if st := a.openStream(ctx, buildB, "token-b-0123456789"); st != http.StatusTooManyRequests {
		t.Fatalf("a fourth stream in all: %d, want 429", st)
	}
	if g := gauge(); g != 3 {
		t.Fatalf("open streams gauge = %v, want 3", g)
	}
	cancelB()
	waitFor(t, "the closed stream to be released", func() bool { return gauge() == 2 })
	if st := a.openStream(ctx, buildB, "token-b-0123456789"); st != 200 {
		t.Fatalf("stream after one closed: %d", st)
	}
}

// waitFor polls cond until it holds, failing after a generous hang guard.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
