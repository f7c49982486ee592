package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/redstate/redstate/buildstatus/memstore"
	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/memqueue"
)

// TestQueueList_ShowsPools: GET /v1/queues and GET /v1/queues/{queue}/stats show the pool of
// queue.pools serving a queue (its mode, concurrency, the queue's weight and the pool's queues)
// and nothing for a queue in no pool, and the list tells which queues are paused; the answers
// match openapi.json.
func TestQueueList_ShowsPools(t *testing.T) {
	b := memqueue.NewBroker(memqueue.Options{})
	admins := map[string]*queue.Admin{}
	for _, name := range []string{"alone", "hi", "lo"} {
		a, err := queue.NewAdmin(b, name)
		if err != nil {
			t.Fatal(err)
		}
		admins[name] = a
	}
	main := func(weight int) *queue.PoolMembership {
		return &queue.PoolMembership{Pool: "main", Strict: true, Concurrency: 4, Weight: weight, Queues: []string{"hi", "lo"}}
	}
	a := newTestAPI(t, func(_ *Config, d *Deps) {
		d.Queues = func(name string) *queue.Admin { return admins[name] }
		d.QueueNames = func() []string { return []string{"alone", "hi", "lo"} }
		d.QueuePool = func(name string) *queue.PoolMembership {
			switch name {
			case "hi":
				return main(2)
			case "lo":
				return main(1)
			}
			return nil
		}
	})
	if err := admins["lo"].Pause(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := a.do("GET", "/v1/queues", "")
	var list struct {
		Queues []queueSummary `json:"queues"`
	}
	if err := json.Unmarshal(r.body, &list); err != nil || r.status != http.StatusOK || len(list.Queues) != 3 {
		t.Fatalf("GET /v1/queues = %d %s", r.status, r.body)
	}
	if q := list.Queues[0]; q.Name != "alone" || q.Pool != nil {
		t.Errorf("a queue in no pool: %+v", q)
	}
	for i, paused := range []bool{false, false, true} {
		if list.Queues[i].Paused != paused {
			t.Errorf("%s: paused %v, want %v", list.Queues[i].Name, list.Queues[i].Paused, paused)
		}
	}
	for i, weight := range map[int]int{1: 2, 2: 1} {
		if p := list.Queues[i].Pool; p == nil || p.Pool != "main" || !p.Strict || p.Concurrency != 4 || p.Weight != weight || !slices.Equal(p.Queues, []string{"hi", "lo"}) {
			t.Errorf("%s: pool %+v, want main with weight %d", list.Queues[i].Name, p, weight)
		}
	}
	r = a.do("GET", "/v1/queues/lo/stats", "")
	var st queue.NamedStats
	if err := json.Unmarshal(r.body, &st); err != nil || st.Pool == nil || st.Pool.Weight != 1 {
		t.Fatalf("GET /v1/queues/lo/stats = %d %s", r.status, r.body)
	}
	r = a.do("GET", "/v1/queues/alone/stats", "")
	var alone queue.NamedStats
	if err := json.Unmarshal(r.body, &alone); err != nil || alone.Pool != nil {
		t.Fatalf("GET /v1/queues/alone/stats = %d %s", r.status, r.body)
	}
}

// TestProbeQueues_SeesAPause: the dashboard's queues topic reads what GET /v1/queues answers,
// so pausing a queue (sizes unchanged) changes the topic's state and is announced. Before, it
// read the sizes only and the Queues page kept offering Pause.
func TestProbeQueues_SeesAPause(t *testing.T) {
	b := memqueue.NewBroker(memqueue.Options{})
	a, err := queue.NewAdmin(b, "q1")
	if err != nil {
		t.Fatal(err)
	}
	builds := memstore.New(memstore.Options{TTL: time.Hour})
	t.Cleanup(func() { _ = builds.Close() })
	h, err := New(Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, Deps{
		Builds:     builds,
		Queues:     func(name string) *queue.Admin { return map[string]*queue.Admin{"q1": a}[name] },
		QueueNames: func() []string { return []string{"q1"} },
	})
	if err != nil {
		t.Fatal(err)
	}
	s := h.(*server)
	ctx := context.Background()
	before, err := s.probeQueues(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	after, err := s.probeQueues(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(before, after) || !bytes.Contains(after, []byte(`"paused":true`)) {
		t.Fatalf("queues topic state before the pause %s, after %s: want the pause in it", before, after)
	}
}
