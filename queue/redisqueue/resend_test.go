package redisqueue_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/redisqueue"
	"github.com/redstate/redstate/redistest"
)

// The tests of this file stall Redis longer than the client's read timeout while one write is
// on its way: go-redis times out, sends the command again on another connection, and both
// copies run when Redis continues (redistest.RunStalled). Each test asserts that the
// server ran the command twice, which proves the re-send happened, and that the write took
// effect once and answered as the first copy would have.

// stalled is a broker whose client re-sends within redistest.RunStalled's stall, on a server
// of its own, with a queue q and a leased consumer c.
type stalled struct {
	srv    *redistest.Server
	client *redis.Client
	b      *redisqueue.Broker
	q, c   string
}

func newStalled(t *testing.T) *stalled {
	t.Helper()
	srv := redistest.StartStandalone(t)
	client := srv.ResendClient(t)
	s := &stalled{srv: srv, client: client, b: mustBroker(t, client, redisqueue.Options{}), q: "jobs", c: "w1"}
	if err := s.b.Heartbeat(context.Background(), s.q, s.c, time.Hour); err != nil {
		t.Fatal(err)
	}
	return s
}

// writeCommands are the commands the broker's writes are sent as: scripts, and the plain
// commands some of them were before they became scripts (so that the tests prove the re-send
// on the old code too).
var writeCommands = []string{"evalsha", "lpush", "lrem", "hincrby"}

// isWrite is the stall's trigger: the first write command of the call (MULTI for a
// transaction).
func isWrite(c redis.Cmder) bool {
	return c.Name() == "multi" || slices.Contains(writeCommands, c.Name())
}

// run runs op while the server stalls from op's first write on, and returns how many write
// commands clients sent the server meanwhile: the calls and the client's copies.
func (s *stalled) run(t *testing.T, op func()) int {
	t.Helper()
	return s.srv.RunStalled(t, isWrite, op, writeCommands...)
}

// wantResent fails the test unless the stall made the client send its calls' copies: runs is
// run's count and want that of the calls and their copies. Tests check it after the effect,
// so that on code without the fix they fail on the effect.
func wantResent(t *testing.T, runs, want int) {
	t.Helper()
	if runs != want {
		t.Fatalf("clients sent %d write commands during the stall, want %d (the calls and the client's copies)", runs, want)
	}
}

// enqueue enqueues n new jobs and returns them.
func (s *stalled) enqueue(t *testing.T, n int) []queue.Message {
	t.Helper()
	ms := make([]queue.Message, n)
	for i := range ms {
		ms[i] = queue.NewMessage(time.Now(), nil)
		if err := s.b.Enqueue(context.Background(), s.q, ms[i]); err != nil {
			t.Fatal(err)
		}
	}
	return ms
}

// dequeue takes n jobs for consumer c.
func (s *stalled) dequeue(t *testing.T, n int) []*queue.Delivery {
	t.Helper()
	ds, err := s.b.DequeueBatch(context.Background(), s.q, s.c, n, time.Second)
	if err != nil || len(ds) != n {
		t.Fatalf("DequeueBatch = %d jobs, %v; want %d", len(ds), err, n)
	}
	return ds
}

// list returns the whole list key, left (newest push) first.
func (s *stalled) list(t *testing.T, key string) []string {
	t.Helper()
	l, err := s.client.LRange(context.Background(), key, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func (s *stalled) stats(t *testing.T) queue.Stats {
	t.Helper()
	st, err := s.b.Stats(context.Background(), s.q)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestResend_EnqueuePushesOnce: a job enqueued once is pushed once. An enqueue sent while Redis
// stalls (go-redis sends it again after redis.read-timeout) used to land twice (two identical
// entries, one JobId), and both copies ran at once. The pending list now holds it once, byte for
// byte the encoded message a plain LPUSH pushed.
func TestResend_EnqueuePushesOnce(t *testing.T) {
	s := newStalled(t)
	ctx := context.Background()
	s.enqueue(t, 1) // loads the script, warms the pool
	m := queue.NewMessage(time.Now(), nil)
	var err error
	runs := s.run(t, func() { err = s.b.Enqueue(ctx, s.q, m) })
	if err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	raw, _ := queue.EncodeMessage(m)
	if l := s.list(t, s.q); len(l) != 2 || l[0] != string(raw) {
		t.Fatalf("pending = %q, want the first job and then %s once", l, raw)
	}
	wantResent(t, runs, 2)
}

// TestResend_EnqueueRawPushesOnce: the legacy producer's path pushes its string once too.
func TestResend_EnqueueRawPushesOnce(t *testing.T) {
	s := newStalled(t)
	ctx := context.Background()
	const raw = `{"RecordId":7,"RetryCount":0,"EnqueueTime":"2025-01-15T10:30:00"}`
	if err := s.b.EnqueueRaw(ctx, s.q, raw); err != nil {
		t.Fatal(err)
	}
	var err error
	runs := s.run(t, func() { err = s.b.EnqueueRaw(ctx, s.q, raw) })
	if err != nil {
		t.Fatalf("EnqueueRaw: %v", err)
	}
	if l := s.list(t, s.q); len(l) != 2 || l[0] != raw || l[1] != raw {
		t.Fatalf("pending = %q, want the raw string twice (two calls), not three times", l)
	}
	wantResent(t, runs, 2)
}

// TestResend_AckAnswersAsTheFirstCopy: the copy of an ack found the job gone (the first copy
// had removed it) and Ack answered ECONFLICT, "no longer in flight": the worker's false
// "it will be redelivered" warning. Now the copy answers as the first did.
func TestResend_AckAnswersAsTheFirstCopy(t *testing.T) {
	s := newStalled(t)
	ctx := context.Background()
	s.enqueue(t, 2)
	ds := s.dequeue(t, 2)
	if err := s.b.Ack(ctx, ds[0]); err != nil {
		t.Fatal(err)
	}
	var err error
	runs := s.run(t, func() { err = s.b.Ack(ctx, ds[1]) })
	if err != nil {
		t.Fatalf("Ack: %v", err)
	}
	if st := s.stats(t); st != (queue.Stats{}) {
		t.Fatalf("stats %+v after the acks, want empty", st)
	}
	wantResent(t, runs, 2)
}

// TestResend_AckBatchAnswersAsTheFirstCopy: the same for a batch of acks (a pipeline before,
// which go-redis re-sends whole; one script per consumer now).
func TestResend_AckBatchAnswersAsTheFirstCopy(t *testing.T) {
	s := newStalled(t)
	ctx := context.Background()
	s.enqueue(t, 5)
	ds := s.dequeue(t, 5)
	for _, err := range s.b.AckBatch(ctx, ds[:2]) {
		if err != nil {
			t.Fatal(err)
		}
	}
	var errs []error
	runs := s.run(t, func() { errs = s.b.AckBatch(ctx, ds[2:]) })
	for i, err := range errs {
		if err != nil {
			t.Fatalf("AckBatch[%d]: %v", i, err)
		}
	}
	if st := s.stats(t); st != (queue.Stats{}) {
		t.Fatalf("stats %+v after the acks, want empty", st)
	}
	wantResent(t, runs, 2) // one script for the consumer's three acks, and its copy
}

// TestResend_RetrySchedulesOnce: a retried job is scheduled once and Retry succeeds.
func TestResend_RetrySchedulesOnce(t *testing.T) {
	s := newStalled(t)
	ctx := context.Background()
	s.enqueue(t, 2)
	ds := s.dequeue(t, 2)
	later := time.Now().Add(time.Hour)
	if err := s.b.Retry(ctx, ds[0], ds[0].Message.NextRetry(), later); err != nil {
		t.Fatal(err)
	}
	var err error
	runs := s.run(t, func() { err = s.b.Retry(ctx, ds[1], ds[1].Message.NextRetry(), later) })
	if err != nil {
		t.Fatalf("Retry: %v", err)
	}
	if st := s.stats(t); st != (queue.Stats{Retrying: 2}) {
		t.Fatalf("stats %+v, want 2 retrying", st)
	}
	wantResent(t, runs, 2)
}

// TestResend_BuryDeadLettersOnce: a buried job is dead-lettered once and Bury succeeds.
func TestResend_BuryDeadLettersOnce(t *testing.T) {
	s := newStalled(t)
	ctx := context.Background()
	s.enqueue(t, 2)
	ds := s.dequeue(t, 2)
	if err := s.b.Bury(ctx, ds[0], ds[0].Message); err != nil {
		t.Fatal(err)
	}
	var err error
	runs := s.run(t, func() { err = s.b.Bury(ctx, ds[1], ds[1].Message) })
	if err != nil {
		t.Fatalf("Bury: %v", err)
	}
	if st := s.stats(t); st != (queue.Stats{Dead: 2}) {
		t.Fatalf("stats %+v, want 2 dead", st)
	}
	wantResent(t, runs, 2)
}

// TestResend_DequeueDeliversTheMovedJobs: the copy of a batch dequeue moved a second batch and
// returned that one, stranding the first in the consumer's in-flight list until the worker's
// audit gave it back one lease later. Now the copy returns the jobs the first copy moved,
// and nothing more is moved.
func TestResend_DequeueDeliversTheMovedJobs(t *testing.T) {
	s := newStalled(t)
	ctx := context.Background()
	ms := s.enqueue(t, 5)
	s.dequeue(t, 1) // loads the script, takes job 1
	var ds []*queue.Delivery
	var err error
	runs := s.run(t, func() { ds, err = s.b.DequeueBatch(ctx, s.q, s.c, 2, time.Second) })
	if err != nil {
		t.Fatalf("DequeueBatch: %v", err)
	}
	if len(ds) != 2 || ds[0].Message.JobID != ms[1].JobID || ds[1].Message.JobID != ms[2].JobID {
		t.Fatalf("DequeueBatch delivered %d jobs, want jobs 2 and 3", len(ds))
	}
	if st := s.stats(t); st != (queue.Stats{Pending: 2, Running: 3}) {
		t.Fatalf("stats %+v, want 2 pending and the 3 delivered jobs running", st)
	}
	wantResent(t, runs, 2)
}

// TestResend_ReleaseCountsTheReleasedJobs: the copy of a release found the jobs already given
// back and answered 0. Now it answers as the first copy did, and the jobs are pending once.
func TestResend_ReleaseCountsTheReleasedJobs(t *testing.T) {
	s := newStalled(t)
	ctx := context.Background()
	s.enqueue(t, 3)
	ds := s.dequeue(t, 3)
	if n, err := s.b.Release(ctx, ds[:1]); n != 1 || err != nil {
		t.Fatalf("Release = %d, %v", n, err)
	}
	var n int
	var err error
	runs := s.run(t, func() { n, err = s.b.Release(ctx, ds[1:]) })
	if n != 2 || err != nil {
		t.Fatalf("Release = %d, %v; want 2", n, err)
	}
	if st := s.stats(t); st != (queue.Stats{Pending: 3}) {
		t.Fatalf("stats %+v, want 3 pending", st)
	}
	wantResent(t, runs, 2)
}

// TestResend_PromoteMovesUpToLimit: the copy of a promotion moved the next due entries too,
// beyond the caller's limit, and answered with its own count.
func TestResend_PromoteMovesUpToLimit(t *testing.T) {
	s := newStalled(t)
	ctx := context.Background()
	s.enqueue(t, 3)
	for _, d := range s.dequeue(t, 3) {
		if err := s.b.Retry(ctx, d, d.Message.NextRetry(), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := s.b.PromoteDue(ctx, s.q, time.Now(), 1); n != 1 || err != nil {
		t.Fatalf("PromoteDue = %d, %v", n, err)
	}
	var n int
	var err error
	runs := s.run(t, func() { n, err = s.b.PromoteDue(ctx, s.q, time.Now(), 1) })
	if n != 1 || err != nil {
		t.Fatalf("PromoteDue = %d, %v; want 1", n, err)
	}
	if st := s.stats(t); st != (queue.Stats{Pending: 2, Retrying: 1}) {
		t.Fatalf("stats %+v, want 2 pending and 1 retrying", st)
	}
	wantResent(t, runs, 2)
}

// TestResend_DeadLetterAdmin: requeueing one dead letter, all of them, or purging them answers
// as the first copy did: before, the copy of RequeueDead answered "no such dead letter"
// (HTTP 404 for a requeue that happened), and the copies of RequeueAllDead and PurgeDead
// counted 0.
func TestResend_DeadLetterAdmin(t *testing.T) {
	s := newStalled(t)
	ctx := context.Background()
	s.enqueue(t, 4)
	for _, d := range s.dequeue(t, 4) {
		if err := s.b.Bury(ctx, d, d.Message); err != nil {
			t.Fatal(err)
		}
	}
	dead, err := s.b.DeadLetters(ctx, s.q, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.b.RequeueDead(ctx, s.q, dead[0].Raw); err != nil {
		t.Fatal(err)
	}
	runs := s.run(t, func() { err = s.b.RequeueDead(ctx, s.q, dead[1].Raw) })
	if err != nil {
		t.Fatalf("RequeueDead: %v", err)
	}
	wantResent(t, runs, 2)
	var n int
	runs = s.run(t, func() { n, err = s.b.RequeueAllDead(ctx, s.q) })
	if n != 2 || err != nil {
		t.Fatalf("RequeueAllDead = %d, %v; want 2", n, err)
	}
	wantResent(t, runs, 2)
	for _, d := range s.dequeue(t, 4) {
		if err := s.b.Bury(ctx, d, d.Message); err != nil {
			t.Fatal(err)
		}
	}
	runs = s.run(t, func() { n, err = s.b.PurgeDead(ctx, s.q) })
	if n != 4 || err != nil {
		t.Fatalf("PurgeDead = %d, %v; want 4", n, err)
	}
	wantResent(t, runs, 2)
}

// TestResend_ThroughputCountsOnce: a minute's job counts are added once.
func TestResend_ThroughputCountsOnce(t *testing.T) {
	s := newStalled(t)
	ctx := context.Background()
	const minute = 29_000_000
	if err := s.b.AddThroughput(ctx, s.q, minute, map[string]int64{"acked": 1}); err != nil {
		t.Fatal(err)
	}
	var err error
	runs := s.run(t, func() { err = s.b.AddThroughput(ctx, s.q, minute, map[string]int64{"acked": 3}) })
	if err != nil {
		t.Fatalf("AddThroughput: %v", err)
	}
	got, err := s.b.Throughput(ctx, s.q, minute, minute)
	if err != nil {
		t.Fatal(err)
	}
	if c := got[minute]; c["acked"] != 4 {
		t.Fatalf("counts %v, want acked 4", c)
	}
	wantResent(t, runs, 2)
}
