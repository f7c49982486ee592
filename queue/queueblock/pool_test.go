package queueblock_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/component"
	"github.com/redstate/redstate/metrics"
	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/queueblock"
	"github.com/redstate/redstate/report"
)

// TestOpen_PoolServesItsQueuesByPriority: queue.pools puts a Go-handler queue and a webhook
// queue in one strict pool with one handler: jobs queued on both before the block starts run
// every high job first, each by its own queue's handler; the report queue, in no pool, keeps
// its own worker.
func TestOpen_PoolServesItsQueuesByPriority(t *testing.T) {
	onBackends(t, func(t *testing.T, client redis.UniversalClient) {
		ctx := context.Background()
		const n = 5
		var mu sync.Mutex
		var order []string
		record := func(q string) {
			mu.Lock()
			order = append(order, q)
			mu.Unlock()
		}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			record("low:queue")
			w.WriteHeader(http.StatusNoContent)
		}))
		t.Cleanup(srv.Close)

		cfg := report.DefaultQueueConfig()
		cfg.RecordStore = report.RecordStoreMemory
		cfg.Queues = append(cfg.Queues, queue.Spec{Name: "high:queue", Handler: "go"},
			queue.Spec{Name: "low:queue", Handler: queue.HandlerWebhook, Webhook: queue.WebhookSpec{URL: srv.URL + "/jobs"}})
		noPrefetch, high, low := 0, 2, 1
		cfg.Pools = []queue.PoolSpec{{Name: "main", Strict: true, Prefetch: &noPrefetch,
			Queues: []queue.PoolMember{{Name: "low:queue", Weight: &low}, {Name: "high:queue", Weight: &high}}}}
		env := component.Env{Redis: client, Namespace: "qb-" + queue.NewJobID()[:8] + ":", Metrics: metrics.New(),
			Log: slog.New(slog.DiscardHandler), ShutdownTimeout: 5 * time.Second}
		qb, err := queueblock.Open(ctx, env, cfg, report.DefaultConfig(), queueblock.Client{Queue: "high:queue", HandlerName: "go",
			Handler: func(_ context.Context, d *queue.Delivery) error { record(d.Queue); return nil }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = qb.Close(ctx) })
		for _, q := range []string{"low:queue", "high:queue"} {
			p := qb.Producer(q)
			for range n {
				if _, err := p.Enqueue(ctx, json.RawMessage(`{}`)); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := qb.Start(ctx); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(waitFor)
		for {
			mu.Lock()
			got := slices.Clone(order)
			mu.Unlock()
			if len(got) == 2*n {
				want := slices.Concat(slices.Repeat([]string{"high:queue"}, n), slices.Repeat([]string{"low:queue"}, n))
				if !slices.Equal(got, want) {
					t.Fatalf("run order %v, want every high job first", got)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("ran %v, want %d jobs", got, 2*n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
}

// TestOpen_RefusesAPoolOfAQueueWithoutWorker: a pool member that is no queue consumed here
// (unknown, or handler external) is refused by Open as by the configuration.
func TestOpen_RefusesAPoolOfAQueueWithoutWorker(t *testing.T) {
	ctx := context.Background()
	cfg := report.DefaultQueueConfig()
	cfg.RecordStore = report.RecordStoreMemory
	cfg.Queues = append(cfg.Queues, queue.Spec{Name: "other", Handler: queue.HandlerExternal})
	cfg.Pools = []queue.PoolSpec{{Name: "main", Queues: []queue.PoolMember{{Name: report.DefaultQueue}, {Name: "other"}}}}
	qb, err := queueblock.Open(ctx, component.Env{Log: slog.New(slog.DiscardHandler)}, cfg, report.DefaultConfig())
	if err == nil {
		_ = qb.Close(ctx)
	}
	if !redstate.IsCode(err, redstate.EINVALID) || !strings.Contains(err.Error(), "queue pool main") {
		t.Fatalf("Open = %v, want EINVALID naming the pool", err)
	}
}
