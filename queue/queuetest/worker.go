package queuetest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redstate/redstate/queue"
)

// deadCall is one call of a dead-letter hook.
type deadCall struct {
	m     queue.Message
	cause string
}

// collectDead returns a dead-letter hook that sends each call to calls and returns err.
func collectDead(calls chan<- deadCall, err error) queue.DeadHook {
	return func(_ context.Context, m queue.Message, cause error) error {
		calls <- deadCall{m: m, cause: cause.Error()}
		return err
	}
}

// FastConfig returns worker settings for tests: tiny delays, a short block timeout and a quiet
// logger.
func FastConfig(q string) queue.WorkerSettings {
	return queue.WorkerSettings{
		Queue:           q,
		BlockTimeout:    100 * time.Millisecond,
		ErrorDelay:      10 * time.Millisecond,
		RetryDelays:     []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 30 * time.Millisecond},
		Lease:           3 * time.Second,
		PromoteInterval: 10 * time.Millisecond,
		ShutdownTimeout: 5 * time.Second,
		Logger:          slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

// startWorker runs w until the test ends; stop cancels it and waits for Run to return.
func startWorker(t *testing.T, w *queue.Worker) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := w.Run(ctx); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(waitFor):
				t.Error("Run did not return after cancel")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// RunWorkerSuite runs the Worker tests (retries, dead-lettering, shutdown, concurrency) on the
// backend newBroker creates.
func RunWorkerSuite(t *testing.T, newBroker NewBroker, f Features) {
	_ = f
	newWorker := func(t *testing.T, b queue.Broker, h queue.Handler, cfg queue.WorkerSettings) *queue.Worker {
		t.Helper()
		w, err := queue.NewWorker(b, h, cfg)
		if err != nil {
			t.Fatalf("NewWorker: %v", err)
		}
		return w
	}
	newPool := func(t *testing.T, b queue.Broker, h queue.Handler, cfg queue.WorkerSettings) *queue.Worker {
		t.Helper()
		w, err := NewPoolOfTwo(b, h, cfg)
		if err != nil {
			t.Fatalf("NewPool: %v", err)
		}
		return w
	}
	RunGroups(t, map[string][]NamedTest{"Prefetch": prefetchWorkerTests(newBroker, newWorker), "Jobs": jobWorkerTests(newBroker, newWorker),
		"Worker": workerTests(newBroker, newWorker), "Acks": ackWorkerTests(newBroker, newWorker), "Pool": poolTests(newBroker),
		"PoolAsWorker": slices.Concat(workerTests(newBroker, newPool), prefetchWorkerTests(newBroker, newPool), jobWorkerTests(newBroker, newPool),
			ackWorkerTests(newBroker, newPool))})
}

// workerTests are the Worker's own tests (retries, dead-lettering, shutdown, concurrency) on
// the workers newWorker returns.
func workerTests(newBroker NewBroker, newWorker func(*testing.T, queue.Broker, queue.Handler, queue.WorkerSettings) *queue.Worker) []NamedTest {
	ctx := context.Background()
	return []NamedTest{
		{"SuccessAcks", func(t *testing.T) {
			b, q := newBroker(t), NewQueueName()
			id := NewIDs(1)[0]
			done := make(chan int64, 1)
			w := newWorker(t, b, func(_ context.Context, d *queue.Delivery) error {
				done <- IDOf(d.Message)
				return nil
			}, FastConfig(q))
			startWorker(t, w)
			mustEnqueue(t, b, q, id)
			select {
			case got := <-done:
				if got != id {
					t.Fatalf("handled %d, want %d", got, id)
				}
			case <-time.After(waitFor):
				t.Fatal("job not handled")
			}
			eventually(t, "ack", func() bool { return mustStats(t, b, q) == queue.Stats{} })
		}},
		{"RetriesThenDeadLetters", func(t *testing.T) {
			b, q := newBroker(t), NewQueueName()
			id := NewIDs(1)[0]
			var mu sync.Mutex
			var seen []queue.Message
			dead := make(chan deadCall, 2)
			cfg := FastConfig(q)
			cfg.OnDead = collectDead(dead, nil)
			w := newWorker(t, b, func(_ context.Context, d *queue.Delivery) error {
				mu.Lock()
				seen = append(seen, d.Message)
				mu.Unlock()
				return errors.New("generation failed")
			}, cfg)
			startWorker(t, w)
			m := mustEnqueue(t, b, q, id)
			var call deadCall
			select {
			case call = <-dead:
			case <-time.After(waitFor):
				t.Fatal("dead-letter hook not called")
			}
			if IDOf(call.m) != id || call.m.RetryCount != queue.DefaultMaxRetries || call.cause != "generation failed" {
				t.Fatalf("dead-letter hook got %+v", call)
			}
			wantStats(t, b, q, queue.Stats{Dead: 1})
			mu.Lock()
			defer mu.Unlock()
			if len(seen) != queue.DefaultMaxRetries+1 {
				t.Fatalf("handler ran %d times, want %d", len(seen), queue.DefaultMaxRetries+1)
			}
			for i, got := range seen {
				want := m
				want.RetryCount = i
				if !equalMessage(got, want) {
					t.Fatalf("attempt %d got %+v, want %+v", i, got, want)
				}
			}
			dl, err := b.DeadLetters(ctx, q, 0, 1)
			if err != nil || len(dl) != 1 || dl[0].Message.RetryCount != queue.DefaultMaxRetries {
				t.Fatalf("dead letter = %+v, %v", dl, err)
			}
			if dl[0].Message.LastError != "generation failed" || dl[0].Message.FailedAt.IsZero() {
				t.Fatalf("dead letter lacks its last error and failure time: %+v", dl[0].Message)
			}
		}},
		{"PermanentFailureDeadLettersAtOnce", func(t *testing.T) {
			b, q := newBroker(t), NewQueueName()
			var runs atomic.Int64
			dead := make(chan deadCall, 2)
			cfg := FastConfig(q)
			cfg.OnDead = collectDead(dead, nil)
			w := newWorker(t, b, func(context.Context, *queue.Delivery) error {
				runs.Add(1)
				return queue.Permanent(errors.New("answers cannot be scored: number out of range"))
			}, cfg)
			startWorker(t, w)
			mustEnqueue(t, b, q, NewIDs(1)[0])
			select {
			case <-dead:
			case <-time.After(waitFor):
				t.Fatal("dead-letter hook not called")
			}
			wantStats(t, b, q, queue.Stats{Dead: 1})
			if n := runs.Load(); n != 1 {
				t.Fatalf("a permanent failure ran %d times, want 1 (no retries)", n)
			}
			dl, err := b.DeadLetters(ctx, q, 0, 1)
			if err != nil || len(dl) != 1 || dl[0].Message.RetryCount != 0 ||
				dl[0].Message.LastError != "answers cannot be scored: number out of range" || dl[0].Message.FailedAt.IsZero() {
				t.Fatalf("dead letter = %+v, %v", dl, err)
			}
		}},
		{"DeadLettersEvenIfHookFails", func(t *testing.T) {
			b, q := newBroker(t), NewQueueName()
			dead := make(chan deadCall, 2)
			cfg := FastConfig(q)
			cfg.NoRetries = true
			cfg.OnDead = collectDead(dead, errInjected)
			w := newWorker(t, b, func(context.Context, *queue.Delivery) error {
				return errors.New("fail")
			}, cfg)
			startWorker(t, w)
			mustEnqueue(t, b, q, NewIDs(1)[0])
			eventually(t, "dead letter", func() bool { return mustStats(t, b, q) == queue.Stats{Dead: 1} })
			eventually(t, "dead-letter hook", func() bool { return len(dead) == 1 })
		}},
		{"CheckRejectsAreDeadLettered", func(t *testing.T) {
			b, q := newBroker(t), NewQueueName()
			got := make(chan int64, 4)
			dead := make(chan deadCall, 2)
			cfg := FastConfig(q)
			cfg.Check = func(m queue.Message) error {
				if IDOf(m) == 0 {
					return errors.New("no id")
				}
				return nil
			}
			cfg.OnDead = collectDead(dead, nil)
			w := newWorker(t, b, func(_ context.Context, d *queue.Delivery) error {
				got <- IDOf(d.Message)
				return nil
			}, cfg)
			startWorker(t, w)
			if err := b.EnqueueRaw(ctx, q, ForeignMessage); err != nil {
				t.Fatal(err)
			}
			id := NewIDs(1)[0]
			mustEnqueue(t, b, q, id)
			select {
			case n := <-got:
				if n != id {
					t.Fatalf("handled %d, want only %d", n, id)
				}
			case <-time.After(waitFor):
				t.Fatal("valid job not handled")
			}
			eventually(t, "rejected message dead-lettered", func() bool { return mustStats(t, b, q) == queue.Stats{Dead: 1} })
			if len(got) != 0 {
				t.Fatal("a rejected message reached the handler")
			}
			dl, err := b.DeadLetters(ctx, q, 0, 10)
			if err != nil || len(dl) != 1 || dl[0].Message == nil {
				t.Fatalf("dead letters = %+v, %v", dl, err)
			}
			if m := dl[0].Message; m.LastError != "no id" || m.FailedAt.IsZero() || string(m.Fields["Key"]) != "12345" {
				t.Fatalf("dead letter %s: want the message as sent with LastError %q and FailedAt", dl[0].Raw, "no id")
			}
			if len(dead) != 0 {
				t.Fatal("the dead-letter hook was called for a message that is not a job of the queue")
			}
		}},
		{"MalformedDeadLetteredForeignConsumed", func(t *testing.T) {
			b, q := newBroker(t), NewQueueName()
			got := make(chan queue.Message, 4)
			w := newWorker(t, b, func(_ context.Context, d *queue.Delivery) error {
				got <- d.Message
				return nil
			}, FastConfig(q))
			startWorker(t, w)
			malformed := []string{`{"Key":"nope"`, `[1,2]`, `{"RetryCount":0,"EnqueueTime":"yesterday"}`}
			for _, raw := range malformed {
				if err := b.EnqueueRaw(ctx, q, raw); err != nil {
					t.Fatal(err)
				}
			}
			if err := b.EnqueueRaw(ctx, q, ForeignMessage); err != nil {
				t.Fatal(err)
			}
			select {
			case m := <-got:
				if string(m.Fields["Key"]) != "12345" {
					t.Fatalf("handled %+v, want the foreign message", m)
				}
			case <-time.After(waitFor):
				t.Fatal("foreign message not handled")
			}
			eventually(t, "malformed messages dead-lettered", func() bool { return mustStats(t, b, q) == queue.Stats{Dead: int64(len(malformed))} })
			dl, err := b.DeadLetters(ctx, q, 0, 10)
			if err != nil || len(dl) != len(malformed) {
				t.Fatalf("dead letters = %+v, %v", dl, err)
			}
			byPayload := map[string]*queue.Message{}
			for _, d := range dl {
				if d.Message != nil {
					byPayload[string(d.Message.Payload)] = d.Message
				}
			}
			for _, raw := range malformed {
				want := raw // its text, verbatim when it is JSON, else as a JSON string
				if !json.Valid([]byte(raw)) {
					b, _ := json.Marshal(raw)
					want = string(b)
				}
				m := byPayload[want]
				if m == nil || !strings.Contains(m.LastError, "malformed queue message") || m.FailedAt.IsZero() || m.JobID == "" {
					t.Errorf("dead letter of %s = %+v: want its text as the payload, the reason, FailedAt and a job id (dead letters %+v)", raw, m, dl)
				}
			}
		}},
		{"GracefulShutdownFinishesRunningJob", func(t *testing.T) {
			b, q := newBroker(t), NewQueueName()
			started, release := make(chan struct{}), make(chan struct{})
			handlerCtxErr := make(chan error, 1)
			w := newWorker(t, b, func(ctx context.Context, _ *queue.Delivery) error {
				close(started)
				<-release
				handlerCtxErr <- ctx.Err()
				return nil
			}, FastConfig(q))
			stop := startWorker(t, w)
			mustEnqueue(t, b, q, NewIDs(1)[0])
			<-started
			stopped := make(chan struct{})
			go func() { stop(); close(stopped) }()
			select {
			case <-stopped:
				t.Fatal("Run returned while a job was running")
			case <-time.After(200 * time.Millisecond):
			}
			mustEnqueue(t, b, q, NewIDs(1)[0]) // must not be taken after shutdown began
			close(release)
			<-stopped
			if err := <-handlerCtxErr; err != nil {
				t.Fatalf("handler ctx was canceled during graceful shutdown: %v", err)
			}
			wantStats(t, b, q, queue.Stats{Pending: 1})
		}},
		{"Concurrency", func(t *testing.T) {
			b, q := newBroker(t), NewQueueName()
			const n = 3
			var running, peak atomic.Int32
			all := make(chan struct{})
			var once sync.Once
			cfg := FastConfig(q)
			cfg.Concurrency = n
			w := newWorker(t, b, func(ctx context.Context, _ *queue.Delivery) error {
				if r := running.Add(1); r >= n {
					once.Do(func() { close(all) })
				}
				defer running.Add(-1)
				for {
					if r := running.Load(); r > peak.Load() {
						peak.Store(r)
					}
					select {
					case <-all:
						return nil
					case <-ctx.Done():
						return ctx.Err()
					case <-time.After(10 * time.Millisecond):
					}
				}
			}, cfg)
			startWorker(t, w)
			for _, id := range NewIDs(n) {
				mustEnqueue(t, b, q, id)
			}
			select {
			case <-all:
			case <-time.After(waitFor):
				t.Fatalf("only %d jobs ran at once, want %d", peak.Load(), n)
			}
			eventually(t, "all acked", func() bool { return mustStats(t, b, q) == queue.Stats{} })
		}},
		{"ResumesAfterBrokerError", func(t *testing.T) {
			fb := &FlakyBroker{Broker: newBroker(t)}
			fb.FailDequeue.Store(3)
			q := NewQueueName()
			done := make(chan struct{})
			w := newWorker(t, fb, func(context.Context, *queue.Delivery) error { close(done); return nil }, FastConfig(q))
			startWorker(t, w)
			mustEnqueue(t, fb, q, NewIDs(1)[0])
			select {
			case <-done:
			case <-time.After(waitFor):
				t.Fatal("worker did not resume after dequeue errors")
			}
			if fb.FailDequeue.Load() > 0 {
				t.Fatal("injected failures were not hit")
			}
		}},
		{"AckWhoseReplyWasLostCountsAsAcked", func(t *testing.T) {
			// The ack was applied but its reply lost: the retried ack finds the job gone, which
			// is the first attempt's doing, not a lease expiry. The job is acked, not lost.
			fb := &FlakyBroker{Broker: newBroker(t)}
			fb.LoseAckReplies.Store(1)
			q := NewQueueName()
			var outcomes sync.Map
			cfg := FastConfig(q)
			cfg.Observer = observerFunc(func(_, outcome string, _ time.Duration) {
				n, _ := outcomes.LoadOrStore(outcome, new(atomic.Int32))
				n.(*atomic.Int32).Add(1)
			})
			w := newWorker(t, fb, func(context.Context, *queue.Delivery) error { return nil }, cfg)
			startWorker(t, w)
			mustEnqueue(t, fb, q, NewIDs(1)[0])
			count := func(outcome string) int32 {
				if n, ok := outcomes.Load(outcome); ok {
					return n.(*atomic.Int32).Load()
				}
				return 0
			}
			eventually(t, "an outcome", func() bool { return count(queue.OutcomeAcked)+count(queue.OutcomeLost) > 0 })
			if fb.LoseAckReplies.Load() >= 0 {
				t.Fatal("the lost reply was not injected")
			}
			if a, l := count(queue.OutcomeAcked), count(queue.OutcomeLost); a != 1 || l != 0 {
				t.Fatalf("outcomes acked=%d lost=%d, want acked=1 lost=0", a, l)
			}
			wantStats(t, fb, q, queue.Stats{})
		}},
		{"CrashedConsumerJobRedelivered", func(t *testing.T) {
			b, q := newBroker(t), NewQueueName()
			// A consumer that dequeues and then "dies": it never acks nor heartbeats again.
			if err := b.Heartbeat(ctx, q, "crashed", 200*time.Millisecond); err != nil {
				t.Fatal(err)
			}
			m := mustEnqueue(t, b, q, NewIDs(1)[0])
			mustDequeue(t, b, q, "crashed")
			got := make(chan queue.Message, 1)
			w := newWorker(t, b, func(_ context.Context, d *queue.Delivery) error { got <- d.Message; return nil }, FastConfig(q))
			startWorker(t, w)
			select {
			case g := <-got:
				if !equalMessage(g, m) {
					t.Fatalf("redelivered %+v, want %+v", g, m)
				}
			case <-time.After(waitFor):
				t.Fatal("crashed consumer's job was not redelivered")
			}
		}},
	}
}

// FlakyBroker wraps a Broker; while FailDequeue > 0 each Dequeue or DequeueBatch decrements it
// and fails with EUNAVAILABLE, and while FailEnqueue > 0 each Enqueue does the same. While
// LoseAckReplies > 0 each Ack or AckBatch is applied and then fails with EUNAVAILABLE, as an
// ack whose reply was lost (a client timeout while the server applied it).
type FlakyBroker struct {
	queue.Broker
	// FailDequeue is how many Dequeue calls fail next.
	FailDequeue atomic.Int32
	// FailEnqueue is how many Enqueue calls fail next.
	FailEnqueue atomic.Int32
	// LoseAckReplies is how many Ack or AckBatch calls lose their reply next.
	LoseAckReplies atomic.Int32
}

// Ack implements queue.Broker, losing the reply while LoseAckReplies > 0.
func (f *FlakyBroker) Ack(ctx context.Context, d *queue.Delivery) error {
	err := f.Broker.Ack(ctx, d)
	if f.LoseAckReplies.Add(-1) >= 0 {
		return errInjected
	}
	return err
}

// AckBatch implements queue.Broker, losing the replies while LoseAckReplies > 0.
func (f *FlakyBroker) AckBatch(ctx context.Context, ds []*queue.Delivery) []error {
	errs := f.Broker.AckBatch(ctx, ds)
	if f.LoseAckReplies.Add(-1) >= 0 {
		for i := range errs {
			errs[i] = errInjected
		}
	}
	return errs
}

// Dequeue implements queue.Broker, failing while FailDequeue > 0.
func (f *FlakyBroker) Dequeue(ctx context.Context, q, c string, timeout time.Duration) (*queue.Delivery, error) {
	if f.FailDequeue.Add(-1) >= 0 {
		return nil, errInjected
	}
	return f.Broker.Dequeue(ctx, q, c, timeout)
}

// DequeueBatch implements queue.Broker, failing while FailDequeue > 0.
func (f *FlakyBroker) DequeueBatch(ctx context.Context, q, c string, n int, timeout time.Duration) ([]*queue.Delivery, error) {
	if f.FailDequeue.Add(-1) >= 0 {
		return nil, errInjected
	}
	return f.Broker.DequeueBatch(ctx, q, c, n, timeout)
}

// Enqueue implements queue.Broker, failing while FailEnqueue > 0.
func (f *FlakyBroker) Enqueue(ctx context.Context, q string, m queue.Message) error {
	if f.FailEnqueue.Add(-1) >= 0 {
		return errInjected
	}
	return f.Broker.Enqueue(ctx, q, m)
}
