package queuetest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
)

// jobModel is the model of one queue's jobs with a record: state per id, and whether the queue
// is paused.
type jobModel struct {
	state  map[string]queue.JobState
	paused bool
}

// in returns the ids in state st.
func (m *jobModel) in(st queue.JobState) []string {
	var out []string
	for id, s := range m.state {
		if s == st {
			out = append(out, id)
		}
	}
	return out
}

// PropertyJobsMatchModel runs random sequences of EnqueueJob (with random ids and delays),
// dequeue + start + ack, retry or bury, cancel (also between dequeue and start), pause and
// resume, promote (retries only, or scheduled jobs too) and requeue against a model, and checks
// after every step that every job's state and the queue's counts match the model, that a
// dequeued job is one the model holds pending, and that a job cancelled before it started is
// refused by StartJob (never runs).
func PropertyJobsMatchModel(t *testing.T, b queue.Broker) {
	ctx := context.Background()
	rapid.Check(t, func(rt *rapid.T) {
		q, c := NewQueueName(), "model-consumer"
		if err := b.Heartbeat(ctx, q, c, longLease); err != nil {
			rt.Fatal(err)
		}
		m := &jobModel{state: map[string]queue.JobState{}}
		p, err := queue.NewProducer(b, q)
		if err != nil {
			rt.Fatal(err)
		}
		ids := []string{"a", "b", "c", "d", "e", "f"}
		pickID := func(label string) string { return rapid.SampledFrom(ids).Draw(rt, label) }
		// take dequeues the next job and checks that the model holds it pending.
		take := func() *queue.Delivery {
			d, err := b.Dequeue(ctx, q, c, time.Second)
			if err != nil || d == nil {
				rt.Fatalf("Dequeue with %d pending: %v, %v", len(m.in(queue.StatePending)), d, err)
			}
			id := queue.RecordID(d.Raw)
			if m.state[id] != queue.StatePending {
				rt.Fatalf("dequeued job %q that the model has %s", id, m.state[id])
			}
			return d
		}
		start := func(d *queue.Delivery, want queue.JobStart) {
			v, err := b.StartJob(ctx, d)
			if err != nil || v != want {
				rt.Fatalf("StartJob = %d, %v; want %d", v, err, want)
			}
		}
		runnable := func() bool { return !m.paused && len(m.in(queue.StatePending)) > 0 }

		rt.Repeat(map[string]func(*rapid.T){
			"enqueue": func(rt *rapid.T) {
				id := pickID("id")
				opts := queue.JobOptions{ID: id}
				if rapid.Bool().Draw(rt, "delayed") {
					opts.Delay = time.Hour
				}
				j, created, err := p.EnqueueJob(ctx, json.RawMessage(`{}`), opts)
				if err != nil {
					rt.Fatal(err)
				}
				_, known := m.state[id]
				if created == known {
					rt.Fatalf("EnqueueJob(%s): created %v, model knows it: %v", id, created, known)
				}
				if !known {
					m.state[id] = queue.StatePending
					if opts.Delay > 0 {
						m.state[id] = queue.StateScheduled
					}
				}
				if j.State != m.state[id] {
					rt.Fatalf("EnqueueJob(%s) answered %s, model %s", id, j.State, m.state[id])
				}
			},
			"run": func(rt *rapid.T) {
				if !runnable() {
					rt.Skip("nothing runnable")
				}
				d := take()
				id := queue.RecordID(d.Raw)
				start(d, queue.JobRun)
				switch rapid.SampledFrom([]string{"ack", "retry", "bury"}).Draw(rt, "outcome") {
				case "ack":
					err, m.state[id] = b.Ack(ctx, d), queue.StateDone
				case "retry":
					err, m.state[id] = b.Retry(ctx, d, d.Message.NextRetry(), time.Now()), queue.StateRetrying
				default:
					err, m.state[id] = b.Bury(ctx, d, d.Message), queue.StateDead
				}
				if err != nil {
					rt.Fatal(err)
				}
			},
			"cancel": func(rt *rapid.T) {
				id := pickID("id")
				_, err := b.CancelJob(ctx, q, id)
				switch st, known := m.state[id]; {
				case !known:
					if !redstate.IsCode(err, redstate.ENOTFOUND) {
						rt.Fatalf("CancelJob of unknown %s: %v", id, err)
					}
				case st.Finished():
					if !redstate.IsCode(err, redstate.ECONFLICT) {
						rt.Fatalf("CancelJob of %s job %s: %v", st, id, err)
					}
				default:
					if err != nil {
						rt.Fatalf("CancelJob of %s job %s: %v", st, id, err)
					}
					m.state[id] = queue.StateCancelled
				}
			},
			"cancelBetweenDequeueAndStart": func(rt *rapid.T) {
				if !runnable() {
					rt.Skip("nothing runnable")
				}
				d := take()
				id := queue.RecordID(d.Raw)
				if _, err := b.CancelJob(ctx, q, id); err != nil {
					rt.Fatal(err)
				}
				m.state[id] = queue.StateCancelled
				start(d, queue.JobCancelled)
			},
			"pauseToggle": func(rt *rapid.T) {
				var err error
				if m.paused {
					err = b.Resume(ctx, q)
				} else {
					err = b.Pause(ctx, q)
				}
				if err != nil {
					rt.Fatal(err)
				}
				m.paused = !m.paused
			},
			"promote": func(rt *rapid.T) {
				all := rapid.Bool().Draw(rt, "scheduled too")
				now := time.Now().Add(time.Minute)
				if all {
					now = now.Add(2 * time.Hour)
				}
				want := len(m.in(queue.StateRetrying))
				if all {
					want += len(m.in(queue.StateScheduled))
				}
				n, err := b.PromoteDue(ctx, q, now, 100)
				if err != nil || n != want {
					rt.Fatalf("PromoteDue = %d, %v; want %d", n, err, want)
				}
				for id, st := range m.state {
					if st == queue.StateRetrying || (all && st == queue.StateScheduled) {
						m.state[id] = queue.StatePending
					}
				}
			},
			"requeue": func(rt *rapid.T) {
				id := pickID("id")
				_, err := b.RequeueJob(ctx, q, id)
				st, known := m.state[id]
				switch {
				case !known:
					if !redstate.IsCode(err, redstate.ENOTFOUND) {
						rt.Fatalf("RequeueJob of unknown %s: %v", id, err)
					}
				case st != queue.StateDead:
					if !redstate.IsCode(err, redstate.ECONFLICT) {
						rt.Fatalf("RequeueJob of %s job %s: %v", st, id, err)
					}
				default:
					if err != nil {
						rt.Fatal(err)
					}
					m.state[id] = queue.StatePending
				}
			},
			"": func(rt *rapid.T) { checkJobModel(rt, b, q, m) },
		})
	})
}

// checkJobModel compares every job's state and the queue's counts with the model.
func checkJobModel(rt *rapid.T, b queue.Broker, q string, m *jobModel) {
	ctx := context.Background()
	for id, want := range m.state {
		j, err := b.Job(ctx, q, id)
		if err != nil || j.State != want {
			rt.Fatalf("job %s: %s, %v; model %s", id, j.State, err, want)
		}
	}
	st, err := b.Stats(ctx, q)
	if err != nil {
		rt.Fatal(err)
	}
	want := queue.Stats{
		Pending:   int64(len(m.in(queue.StatePending))),
		Scheduled: int64(len(m.in(queue.StateScheduled))),
		Retrying:  int64(len(m.in(queue.StateRetrying))),
		Dead:      int64(len(m.in(queue.StateDead))),
	}
	if st != want {
		rt.Fatalf("Stats = %+v, model %+v (%s)", st, want, fmt.Sprint(m.state))
	}
}
