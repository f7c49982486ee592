package redisqueue_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/redisqueue"
	"github.com/redstate/redstate/redistest"
)

// TestDelayedJobs_FireWithin100msUnderLoad: 100 jobs delayed 0.2–1.2 s run within 100 ms of
// their time while the same worker pool (default PromoteInterval, 1 s) handles a stream of
// plain jobs that keeps the queue busy. Before the promote loop ran every DuePromoteInterval
// the lateness reached the 1 s maintenance tick.
func TestDelayedJobs_FireWithin100msUnderLoad(t *testing.T) {
	redistest.RunOnTopologies(t, func(t *testing.T, c redis.UniversalClient) {
		b := mustBroker(t, c, redisqueue.Options{Namespace: uniqueNS()})
		q := "delays"
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var mu sync.Mutex
		var late []time.Duration
		const delayed = 100
		all := make(chan struct{})
		h := func(_ context.Context, d *queue.Delivery) error {
			if d.Message.Job == nil {
				return nil // load
			}
			var due time.Time
			if err := json.Unmarshal(d.Message.Payload, &due); err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			late = append(late, time.Since(due))
			if len(late) == delayed {
				close(all)
			}
			return nil
		}
		w, err := queue.NewWorker(b, h, queue.WorkerSettings{Queue: q, Concurrency: 4, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		var bg sync.WaitGroup
		bg.Go(func() { _ = w.Run(ctx) })
		bg.Go(func() { // load: plain jobs as fast as one producer goes
			for ctx.Err() == nil {
				_ = b.Enqueue(ctx, q, queue.NewMessage(time.Now(), json.RawMessage(`0`)))
			}
		})
		p, err := queue.NewProducer(b, q)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		for i := range delayed {
			at := start.Add(200*time.Millisecond + time.Duration(i)*10*time.Millisecond)
			payload, _ := json.Marshal(at)
			if _, _, err := p.EnqueueJob(ctx, payload, queue.JobOptions{ProcessAt: at}); err != nil {
				t.Fatal(err)
			}
		}
		select {
		case <-all:
		case <-time.After(30 * time.Second):
			t.Fatal("delayed jobs did not all run")
		}
		cancel()
		bg.Wait()
		slices.Sort(late)
		t.Logf("lateness of %d delayed jobs under load: min %v, median %v, p99 %v, max %v", len(late), late[0], late[len(late)/2], late[len(late)*99/100], late[len(late)-1])
		if late[0] < 0 {
			t.Fatalf("a delayed job ran %v early", -late[0])
		}
		if late[len(late)-1] > 100*time.Millisecond {
			t.Fatalf("a delayed job ran %v after its time, want within 100ms", late[len(late)-1])
		}
	})
}
