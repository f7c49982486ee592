package queuetest

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
)

// mustEnqueueJob enqueues payload with opts on q through a Producer and wants it created.
func mustEnqueueJob(t *testing.T, b queue.Broker, q string, payload string, opts queue.JobOptions) queue.Job {
	t.Helper()
	j, created, err := mustProducer(t, b, q).EnqueueJob(context.Background(), json.RawMessage(payload), opts)
	if err != nil {
		t.Fatalf("EnqueueJob: %v", err)
	}
	if !created {
		t.Fatalf("EnqueueJob: created false for a new job %+v", j)
	}
	return j
}

func mustProducer(t *testing.T, b queue.Broker, q string) *queue.Producer {
	t.Helper()
	p, err := queue.NewProducer(b, q)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// mustJob returns the record of id and wants it in state.
func mustJob(t *testing.T, b queue.Broker, q, id string, state queue.JobState) queue.Job {
	t.Helper()
	j, err := b.Job(context.Background(), q, id)
	if err != nil {
		t.Fatalf("Job(%s): %v", id, err)
	}
	if j.State != state {
		t.Fatalf("job %s is %s, want %s (%+v)", id, j.State, state, j)
	}
	return j
}

// mustStart starts a delivery with a record and wants verdict.
func mustStart(t *testing.T, b queue.Broker, d *queue.Delivery, want queue.JobStart) {
	t.Helper()
	v, err := b.StartJob(context.Background(), d)
	if err != nil {
		t.Fatalf("StartJob: %v", err)
	}
	if v != want {
		t.Fatalf("StartJob = %d, want %d", v, want)
	}
}

// jobTests are the conformance tests of job records (queue.JobBroker).
func (s brokerSuite) jobTests() []NamedTest {
	ctx := context.Background()
	return []NamedTest{
		{"SameIDIsOneJob", func(t *testing.T) {
			b, q, _ := s.setup(t)
			first := mustEnqueueJob(t, b, q, `{"n":1}`, queue.JobOptions{ID: "order-1"})
			again, created, err := mustProducer(t, b, q).EnqueueJob(ctx, json.RawMessage(`{"n":2}`), queue.JobOptions{ID: "order-1"})
			if err != nil || created {
				t.Fatalf("second EnqueueJob: created %v, err %v", created, err)
			}
			if again.ID != "order-1" || string(again.Message.Payload) != `{"n":1}` || again.State != queue.StatePending {
				t.Fatalf("second EnqueueJob returned %+v, want the first job %+v", again, first)
			}
			wantStats(t, b, q, queue.Stats{Pending: 1})
		}},
		{"SameIDUnder32ConcurrentEnqueuers", func(t *testing.T) {
			b, q, _ := s.setup(t)
			p := mustProducer(t, b, q)
			var created atomic.Int32
			var wg sync.WaitGroup
			for i := range 32 {
				wg.Go(func() {
					j, c, err := p.EnqueueJob(ctx, json.RawMessage(strconv.Itoa(i)), queue.JobOptions{ID: "the-one"})
					if err != nil || j.ID != "the-one" {
						t.Errorf("EnqueueJob: %+v, %v", j, err)
					}
					if c {
						created.Add(1)
					}
				})
			}
			wg.Wait()
			if created.Load() != 1 {
				t.Fatalf("%d of 32 concurrent enqueues of one id created a job, want 1", created.Load())
			}
			wantStats(t, b, q, queue.Stats{Pending: 1})
		}},
		{"UniquePayloadUnder32ConcurrentEnqueuers", func(t *testing.T) {
			b, q, _ := s.setup(t)
			p := mustProducer(t, b, q)
			var ok, conflicts atomic.Int32
			var wg sync.WaitGroup
			for range 32 {
				wg.Go(func() {
					_, _, err := p.EnqueueJob(ctx, json.RawMessage(`{"same":true}`), queue.JobOptions{UniqueFor: time.Hour})
					switch {
					case err == nil:
						ok.Add(1)
					case redstate.IsCode(err, redstate.ECONFLICT):
						conflicts.Add(1)
					default:
						t.Errorf("EnqueueJob: %v", err)
					}
				})
			}
			wg.Wait()
			if ok.Load() != 1 || conflicts.Load() != 31 {
				t.Fatalf("%d enqueued, %d conflicts; want 1 and 31", ok.Load(), conflicts.Load())
			}
			wantStats(t, b, q, queue.Stats{Pending: 1})
		}},
		{"LegacyEnqueueHasNoRecord", func(t *testing.T) {
			b, q, c := s.setup(t)
			m := mustEnqueue(t, b, q, NewIDs(1)[0])
			if _, err := b.Job(ctx, q, m.JobID); !redstate.IsCode(err, redstate.ENOTFOUND) {
				t.Fatalf("Job of a plain Enqueue: %v, want ENOTFOUND", err)
			}
			d := mustDequeue(t, b, q, c)
			if queue.HasRecord(d.Raw) || strings.Contains(d.Raw, `"Job"`) {
				t.Fatalf("plain message %s carries a record", d.Raw)
			}
		}},
		{"DelayWaitsInScheduledSet", func(t *testing.T) {
			b, q, c := s.setup(t)
			at := time.Now().Add(time.Hour)
			j := mustEnqueueJob(t, b, q, `"later"`, queue.JobOptions{ProcessAt: at})
			wantStats(t, b, q, queue.Stats{Scheduled: 1})
			mustJob(t, b, q, j.ID, queue.StateScheduled)
			if n, err := b.PromoteDue(ctx, q, at.Add(-time.Second), 10); err != nil || n != 0 {
				t.Fatalf("PromoteDue before due: %d, %v", n, err)
			}
			if n, err := b.PromoteDue(ctx, q, at, 10); err != nil || n != 1 {
				t.Fatalf("PromoteDue at due: %d, %v", n, err)
			}
			mustJob(t, b, q, j.ID, queue.StatePending)
			d := mustDequeue(t, b, q, c)
			if queue.RecordID(d.Raw) != j.ID {
				t.Fatalf("dequeued %s, want job %s", d.Raw, j.ID)
			}
		}},
		{"NextDueIsTheEarliestScheduledJobOrRetry", func(t *testing.T) {
			b, q, c := s.setup(t)
			dr, ok := b.(queue.DueReader)
			if !ok {
				t.Skip("the broker is not a queue.DueReader")
			}
			wantNext := func(want time.Time, wantOK bool) {
				t.Helper()
				got, ok, err := dr.NextDue(ctx, q)
				if err != nil || ok != wantOK || wantOK && got.UnixMilli() != want.UnixMilli() {
					t.Fatalf("NextDue = %v, %v, %v; want %v, %v", got, ok, err, want, wantOK)
				}
			}
			wantNext(time.Time{}, false)
			later := time.Now().Add(time.Hour)
			mustEnqueueJob(t, b, q, `"later"`, queue.JobOptions{ProcessAt: later})
			wantNext(later, true)
			m := mustEnqueue(t, b, q, NewIDs(1)[0])
			d := mustDequeue(t, b, q, c)
			sooner := time.Now().Add(10 * time.Minute)
			if err := b.Retry(ctx, d, m, sooner); err != nil {
				t.Fatal(err)
			}
			wantNext(sooner, true)
			if _, _, err := dr.NextDue(ctx, "bad name{"); !redstate.IsCode(err, redstate.EINVALID) {
				t.Fatalf("NextDue of a bad queue name: %v, want EINVALID", err)
			}
		}},
		{"UniqueForRefusesSamePayload", func(t *testing.T) {
			b, q, _ := s.setup(t)
			first := mustEnqueueJob(t, b, q, `{"to":"a@b"}`, queue.JobOptions{UniqueFor: time.Hour})
			_, _, err := mustProducer(t, b, q).EnqueueJob(ctx, json.RawMessage(`{"to":"a@b"}`), queue.JobOptions{UniqueFor: time.Hour})
			wantCode(t, err, redstate.ECONFLICT)
			if !strings.Contains(err.Error(), first.ID) {
				t.Fatalf("ECONFLICT %q does not name the existing job %s", err, first.ID)
			}
			mustEnqueueJob(t, b, q, `{"to":"c@d"}`, queue.JobOptions{UniqueFor: time.Hour})
			wantStats(t, b, q, queue.Stats{Pending: 2})
		}},
		{"LifecycleDoneWithResult", func(t *testing.T) {
			b, q, c := s.setup(t)
			j := mustEnqueueJob(t, b, q, `1`, queue.JobOptions{Retention: time.Hour})
			d := mustDequeue(t, b, q, c)
			mustJob(t, b, q, j.ID, queue.StatePending) // dequeued, not started
			mustStart(t, b, d, queue.JobRun)
			active := mustJob(t, b, q, j.ID, queue.StateActive)
			if len(active.Attempts) != 1 || active.Attempts[0].Consumer != c || active.Attempts[0].Start.IsZero() {
				t.Fatalf("active job attempts %+v", active.Attempts)
			}
			d.Result = json.RawMessage(`{"ok":true}`)
			if err := b.Ack(ctx, d); err != nil {
				t.Fatal(err)
			}
			done := mustJob(t, b, q, j.ID, queue.StateDone)
			if string(done.Result) != `{"ok":true}` || done.FinishedAt.IsZero() || done.Attempts[0].End.IsZero() {
				t.Fatalf("done job %+v", done)
			}
			wantStats(t, b, q, queue.Stats{})
		}},
		{"RetryDeadRequeue", func(t *testing.T) {
			b, q, c := s.setup(t)
			j := mustEnqueueJob(t, b, q, `2`, queue.JobOptions{})
			d := mustDequeue(t, b, q, c)
			mustStart(t, b, d, queue.JobRun)
			next := d.Message.NextRetry()
			next.LastError = "boom"
			if err := b.Retry(ctx, d, next, time.Now()); err != nil {
				t.Fatal(err)
			}
			r := mustJob(t, b, q, j.ID, queue.StateRetrying)
			if r.Attempts[0].Error != "boom" || r.Message.RetryCount != 1 {
				t.Fatalf("retrying job %+v", r)
			}
			if n, err := b.PromoteDue(ctx, q, time.Now().Add(time.Second), 10); err != nil || n != 1 {
				t.Fatalf("PromoteDue: %d, %v", n, err)
			}
			mustJob(t, b, q, j.ID, queue.StatePending)
			d = mustDequeue(t, b, q, c)
			mustStart(t, b, d, queue.JobRun)
			dead := d.Message
			dead.LastError = "fatal"
			if err := b.Bury(ctx, d, dead); err != nil {
				t.Fatal(err)
			}
			dj := mustJob(t, b, q, j.ID, queue.StateDead)
			if len(dj.Attempts) != 2 || dj.Attempts[1].Error != "fatal" {
				t.Fatalf("dead job attempts %+v", dj.Attempts)
			}
			_, err := b.RequeueJob(ctx, q, "no-such-job")
			wantCode(t, err, redstate.ENOTFOUND)
			if _, err := b.RequeueJob(ctx, q, j.ID); err != nil {
				t.Fatal(err)
			}
			mustJob(t, b, q, j.ID, queue.StatePending)
			wantStats(t, b, q, queue.Stats{Pending: 1})
			_, err = b.RequeueJob(ctx, q, j.ID)
			wantCode(t, err, redstate.ECONFLICT)
		}},
		{"CancelWaitingJobs", func(t *testing.T) {
			b, q, _ := s.setup(t)
			pending := mustEnqueueJob(t, b, q, `1`, queue.JobOptions{})
			scheduled := mustEnqueueJob(t, b, q, `2`, queue.JobOptions{Delay: time.Hour})
			for _, id := range []string{pending.ID, scheduled.ID} {
				if j, err := b.CancelJob(ctx, q, id); err != nil || j.State != queue.StateCancelled {
					t.Fatalf("CancelJob(%s): %+v, %v", id, j, err)
				}
				mustJob(t, b, q, id, queue.StateCancelled)
				_, err := b.CancelJob(ctx, q, id)
				wantCode(t, err, redstate.ECONFLICT)
			}
			wantStats(t, b, q, queue.Stats{})
			_, err := b.CancelJob(ctx, q, "no-such-job")
			wantCode(t, err, redstate.ENOTFOUND)
		}},
		{"CancelRacingDequeueNeverRuns", func(t *testing.T) {
			b, q, c := s.setup(t)
			j := mustEnqueueJob(t, b, q, `1`, queue.JobOptions{})
			d := mustDequeue(t, b, q, c) // dequeued, not started: the cancel lands in between
			if _, err := b.CancelJob(ctx, q, j.ID); err != nil {
				t.Fatal(err)
			}
			mustStart(t, b, d, queue.JobCancelled)
			mustJob(t, b, q, j.ID, queue.StateCancelled)
			wantStats(t, b, q, queue.Stats{})
		}},
		{"CancelActiveIsARequest", func(t *testing.T) {
			b, q, c := s.setup(t)
			j := mustEnqueueJob(t, b, q, `1`, queue.JobOptions{})
			d := mustDequeue(t, b, q, c)
			mustStart(t, b, d, queue.JobRun)
			if ids, err := b.CancelRequested(ctx, q, []string{j.ID}); err != nil || len(ids) != 0 {
				t.Fatalf("CancelRequested before cancel: %v, %v", ids, err)
			}
			cj, err := b.CancelJob(ctx, q, j.ID)
			if err != nil || cj.State != queue.StateActive || !cj.CancelRequested {
				t.Fatalf("CancelJob of an active job: %+v, %v", cj, err)
			}
			if ids, err := b.CancelRequested(ctx, q, []string{j.ID, "other"}); err != nil || len(ids) != 1 || ids[0] != j.ID {
				t.Fatalf("CancelRequested: %v, %v", ids, err)
			}
			d.Cancelled = true
			if err := b.Ack(ctx, d); err != nil {
				t.Fatal(err)
			}
			mustJob(t, b, q, j.ID, queue.StateCancelled)
		}},
		{"JobsListsByStateWithCursor", func(t *testing.T) {
			b, q, _ := s.setup(t)
			want := map[string]bool{}
			for i := range 5 {
				want[mustEnqueueJob(t, b, q, strconv.Itoa(i), queue.JobOptions{}).ID] = true
			}
			mustEnqueueJob(t, b, q, `9`, queue.JobOptions{Delay: time.Hour})
			got := map[string]bool{}
			cursor, pages := "", 0
			for {
				jobs, next, err := b.Jobs(ctx, q, queue.StatePending, cursor, 2)
				if err != nil {
					t.Fatal(err)
				}
				pages++
				for _, j := range jobs {
					got[j.ID] = true
				}
				if next == "" {
					break
				}
				cursor = next
			}
			if len(got) != len(want) || pages != 3 {
				t.Fatalf("listed %d pending jobs in %d pages, want %d in 3", len(got), pages, len(want))
			}
			for id := range want {
				if !got[id] {
					t.Fatalf("job %s not listed", id)
				}
			}
			if _, _, err := b.Jobs(ctx, q, "nonsense", "", 10); !redstate.IsCode(err, redstate.EINVALID) {
				t.Fatalf("bad state: %v", err)
			}
		}},
		{"PausedQueueDeliversNothing", func(t *testing.T) {
			b, q, c := s.setup(t)
			j := mustEnqueueJob(t, b, q, `1`, queue.JobOptions{})
			d := mustDequeue(t, b, q, c) // dequeued in the instant before the pause
			if err := b.Pause(ctx, q); err != nil {
				t.Fatal(err)
			}
			if p, err := b.Paused(ctx, q); err != nil || !p {
				t.Fatalf("Paused = %v, %v", p, err)
			}
			mustStart(t, b, d, queue.JobPaused)
			mustJob(t, b, q, j.ID, queue.StatePending)
			mustEnqueue(t, b, q, NewIDs(1)[0]) // enqueue still works
			if got, err := b.Dequeue(ctx, q, c, 300*time.Millisecond); err != nil || got != nil {
				t.Fatalf("Dequeue on a paused queue: %v, %v", got, err)
			}
			wantStats(t, b, q, queue.Stats{Pending: 2})
			if err := b.Resume(ctx, q); err != nil {
				t.Fatal(err)
			}
			d = mustDequeue(t, b, q, c)
			if queue.RecordID(d.Raw) != j.ID {
				t.Fatalf("after resume dequeued %s, want the job given back first", d.Raw)
			}
		}},
		{"PauseEndsABlockedDequeueWithoutDelivering", func(t *testing.T) {
			b, q, c := s.setup(t)
			got := make(chan *queue.Delivery, 1)
			go func() {
				d, _ := b.Dequeue(ctx, q, c, 2*time.Second)
				got <- d
			}()
			time.Sleep(100 * time.Millisecond) // let the dequeue block (either way the job must not arrive)
			if err := b.Pause(ctx, q); err != nil {
				t.Fatal(err)
			}
			mustEnqueue(t, b, q, NewIDs(1)[0])
			if d := <-got; d != nil {
				t.Fatalf("a paused queue delivered %s", d.Raw)
			}
			wantStats(t, b, q, queue.Stats{Pending: 1})
		}},
	}
}
