package redisqueue_test

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/queue"
)

// outcomes is a queue.Observer that passes every outcome on.
type outcomes chan string

func (o outcomes) ObserveJob(_, outcome string, _ time.Duration) { o <- outcome }

// warnings is a slog.Handler keeping the messages of Warn and Error records.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, r.Message)
	return nil
}
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnings) WithGroup(string) slog.Handler      { return w }

func (w *warnings) contains(s string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, m := range w.msgs {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// TestResend_WorkerAckIsNotReportedLost: an acked job is not reported lost. The warning "queue
// ack found the job no longer in flight; it will be redelivered" used to be logged for a
// duplicate: a worker
// acked a job while Redis stalled, go-redis re-sent the ack, the copy found the job already
// removed (by the first copy) and the worker reported it lost, although it was acked and
// nothing would redeliver it. Now the copy answers as the first did: the job counts as acked,
// once, and nothing is logged.
func TestResend_WorkerAckIsNotReportedLost(t *testing.T) {
	s := newStalled(t)
	ctx, cancel := context.WithCancel(context.Background())
	seen := make(outcomes, 10)
	logs := &warnings{}
	started, release := make(chan struct{}, 1), make(chan struct{})
	w, err := queue.NewWorker(s.b, func(context.Context, *queue.Delivery) error {
		started <- struct{}{}
		<-release
		return nil
	}, queue.WorkerSettings{Queue: s.q, ConsumerID: "w2", NoPrefetch: true, Lease: time.Minute, BlockTimeout: 10 * time.Second,
		ErrorDelay: 50 * time.Millisecond, Logger: slog.New(logs), Observer: seen})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	job := s.enqueue(t, 1)[0]
	raw, _ := queue.EncodeMessage(job)
	<-started
	// The stall starts with the ack: the first write that carries the job.
	isAck := func(c redis.Cmder) bool { return isWrite(c) && slices.Contains(c.Args(), any(string(raw))) }
	var outcome string
	runs := s.srv.RunStalled(t, isAck, func() {
		close(release) // the handler returns and the worker acks: Redis stalls
		outcome = <-seen
	}, writeCommands...)
	if outcome != queue.OutcomeAcked {
		t.Fatalf("outcome %q, want %q", outcome, queue.OutcomeAcked)
	}
	if logs.contains("no longer in flight") {
		t.Fatalf("the worker reported an acked job lost: %q", logs.msgs)
	}
	if len(logs.msgs) > 0 {
		t.Fatalf("the worker logged %q for an ack that Redis answered late", logs.msgs)
	}
	if st := s.stats(t); st != (queue.Stats{}) {
		t.Fatalf("stats %+v, want the job gone", st)
	}
	if runs < 2 {
		t.Fatalf("clients sent %d write commands during the stall, want the ack and its copy", runs)
	}
}
