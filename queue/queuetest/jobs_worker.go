package queuetest

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
)

// waitJob polls the record of id until it is in state.
func waitJob(t *testing.T, b queue.Broker, q, id string, state queue.JobState) queue.Job {
	t.Helper()
	var j queue.Job
	eventually(t, "job "+id+" "+string(state), func() bool {
		var err error
		j, err = b.Job(context.Background(), q, id)
		return err == nil && j.State == state
	})
	return j
}

// jobWorkerTests are the worker's conformance tests for jobs with options and records.
func jobWorkerTests(newBroker NewBroker, newWorker func(*testing.T, queue.Broker, queue.Handler, queue.WorkerSettings) *queue.Worker) []NamedTest {
	ctx := context.Background()
	return []NamedTest{
		{"TimeoutIsTheHandlersDeadline", func(t *testing.T) {
			b, q := newBroker(t), NewQueueName()
			left := make(chan time.Duration, 1)
			w := newWorker(t, b, func(ctx context.Context, _ *queue.Delivery) error {
				dl, ok := ctx.Deadline()
				if !ok {
					left <- -1
					return nil
				}
				left <- time.Until(dl)
				return nil
			}, FastConfig(q))
			startWorker(t, w)
			mustEnqueueJob(t, b, q, `1`, queue.JobOptions{Timeout: time.Hour})
			if got := <-left; got <= 0 || got > time.Hour {
				t.Fatalf("handler deadline in %v, want within the job's 1h timeout", got)
			}
		}},
		{"ResultIsKeptWhenDone", func(t *testing.T) {
			b, q := newBroker(t), NewQueueName()
			w := newWorker(t, b, func(ctx context.Context, _ *queue.Delivery) error {
				return queue.SetResult(ctx, json.RawMessage(`{"sent":3}`))
			}, FastConfig(q))
			startWorker(t, w)
			j := mustEnqueueJob(t, b, q, `1`, queue.JobOptions{})
			done := waitJob(t, b, q, j.ID, queue.StateDone)
			if string(done.Result) != `{"sent":3}` || len(done.Attempts) != 1 {
				t.Fatalf("done job %+v", done)
			}
		}},
		{"PerJobRetryPolicy", func(t *testing.T) {
			b, q := newBroker(t), NewQueueName()
			var runs atomic.Int32
			w := newWorker(t, b, func(context.Context, *queue.Delivery) error {
				runs.Add(1)
				return errors.New("always fails")
			}, FastConfig(q)) // the worker would retry 3 times
			startWorker(t, w)
			one := 1
			j := mustEnqueueJob(t, b, q, `1`, queue.JobOptions{MaxRetries: &one, RetryDelays: []time.Duration{time.Millisecond}})
			dead := waitJob(t, b, q, j.ID, queue.StateDead)
			if len(dead.Attempts) != 2 || dead.Attempts[0].Error != "always fails" || runs.Load() != 2 {
				t.Fatalf("dead after %d runs, attempts %+v; want 2 runs (maxRetries 1)", runs.Load(), dead.Attempts)
			}
		}},
		{"CancelStopsARunningJob", func(t *testing.T) {
			b, q := newBroker(t), NewQueueName()
			started := make(chan struct{})
			stopped := make(chan error, 1)
			cfg := FastConfig(q)
			cfg.Lease = 1500 * time.Millisecond // heartbeats (which carry cancel requests) every 500ms; a shorter lease lapsed under load with writes waiting for a replica
			w := newWorker(t, b, func(ctx context.Context, _ *queue.Delivery) error {
				close(started)
				<-ctx.Done()
				stopped <- ctx.Err()
				return ctx.Err()
			}, cfg)
			startWorker(t, w)
			j := mustEnqueueJob(t, b, q, `1`, queue.JobOptions{})
			<-started
			if _, err := b.CancelJob(ctx, q, j.ID); err != nil {
				t.Fatal(err)
			}
			if err := <-stopped; err == nil {
				t.Fatal("handler ctx not cancelled")
			}
			waitJob(t, b, q, j.ID, queue.StateCancelled)
			eventually(t, "queue empty", func() bool { return mustStats(t, b, q) == queue.Stats{} })
		}},
		{"CancelledJobNeverRuns", func(t *testing.T) {
			b, q := newBroker(t), NewQueueName()
			var mu sync.Mutex
			ran := map[string]bool{}
			w := newWorker(t, b, func(_ context.Context, d *queue.Delivery) error {
				mu.Lock()
				defer mu.Unlock()
				ran[d.Message.JobID] = true
				return nil
			}, FastConfig(q))
			var all, cancelledWaiting []string
			for range 50 {
				all = append(all, mustEnqueueJob(t, b, q, `1`, queue.JobOptions{}).ID)
			}
			startWorker(t, w)
			for i, id := range all {
				if i%2 != 0 {
					continue
				}
				j, err := b.CancelJob(ctx, q, id)
				switch {
				case err == nil && j.State == queue.StateCancelled:
					cancelledWaiting = append(cancelledWaiting, id) // pending, or dequeued and not started
				case err != nil && !redstate.IsCode(err, redstate.ECONFLICT):
					t.Fatal(err)
				}
			}
			for _, id := range all {
				eventually(t, "job "+id+" finished", func() bool {
					j, err := b.Job(ctx, q, id)
					return err == nil && j.State.Finished()
				})
			}
			mu.Lock()
			defer mu.Unlock()
			for _, id := range cancelledWaiting {
				if ran[id] {
					t.Fatalf("job %s was cancelled before it started and ran anyway", id)
				}
			}
			if len(cancelledWaiting) == 0 {
				t.Log("every cancel found its job running or done (no waiting job was cancelled this run)")
			}
		}},
		{"PausedQueueRunsNothing", func(t *testing.T) {
			b, q := newBroker(t), NewQueueName()
			if err := b.Pause(ctx, q); err != nil {
				t.Fatal(err)
			}
			var runs atomic.Int32
			w := newWorker(t, b, func(context.Context, *queue.Delivery) error {
				runs.Add(1)
				return nil
			}, FastConfig(q))
			startWorker(t, w)
			j := mustEnqueueJob(t, b, q, `1`, queue.JobOptions{})
			mustEnqueue(t, b, q, NewIDs(1)[0])
			// Proof of inactivity: a second, unpaused queue's job on the same broker runs
			// meanwhile, and the paused one's jobs stay pending.
			q2 := NewQueueName()
			w2 := newWorker(t, b, func(context.Context, *queue.Delivery) error { return nil }, FastConfig(q2))
			startWorker(t, w2)
			other := mustEnqueueJob(t, b, q2, `2`, queue.JobOptions{})
			waitJob(t, b, q2, other.ID, queue.StateDone)
			time.Sleep(3 * queue.PausePoll) // several pause polls of the paused worker
			if runs.Load() != 0 || mustStats(t, b, q).Pending != 2 {
				t.Fatalf("paused queue ran %d jobs; stats %+v", runs.Load(), mustStats(t, b, q))
			}
			if err := b.Resume(ctx, q); err != nil {
				t.Fatal(err)
			}
			waitJob(t, b, q, j.ID, queue.StateDone)
			eventually(t, "both jobs ran", func() bool { return runs.Load() == 2 })
		}},
		{"ForeignJobMemberWithoutRecordRuns", func(t *testing.T) {
			// A producer outside redstate wrote a "Job" member, but not first: the message has
			// no record (queue.RecordPrefix) and runs as a plain job with its options.
			b, q := newBroker(t), NewQueueName()
			left := make(chan time.Duration, 1)
			w := newWorker(t, b, func(ctx context.Context, _ *queue.Delivery) error {
				dl, _ := ctx.Deadline()
				left <- time.Until(dl)
				return nil
			}, FastConfig(q))
			startWorker(t, w)
			raw := `{"RetryCount":0,"EnqueueTime":"2025-01-15T10:30:00","Job":{"TimeoutMs":3600000},"JobId":"foreign-1"}`
			if err := b.EnqueueRaw(ctx, q, raw); err != nil {
				t.Fatal(err)
			}
			if got := <-left; got <= 0 || got > time.Hour {
				t.Fatalf("handler deadline in %v, want the job's 1h timeout", got)
			}
			eventually(t, "ack", func() bool { return mustStats(t, b, q) == queue.Stats{} })
		}},
		{"DelayedJobRuns", func(t *testing.T) {
			b, q := newBroker(t), NewQueueName()
			ran := make(chan time.Time, 1)
			w := newWorker(t, b, func(context.Context, *queue.Delivery) error {
				ran <- time.Now()
				return nil
			}, FastConfig(q))
			startWorker(t, w)
			at := time.Now().Add(300 * time.Millisecond)
			mustEnqueueJob(t, b, q, `1`, queue.JobOptions{ProcessAt: at})
			if got := <-ran; got.Before(at) {
				t.Fatalf("delayed job ran %v before its time", at.Sub(got))
			}
		}},
	}
}
