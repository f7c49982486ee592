package redisqueue_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/queuetest"
	"github.com/redstate/redstate/queue/redisqueue"
	"github.com/redstate/redstate/redistest"
)

// TestRedisCrash_AcknowledgedEnqueuesSurviveSIGKILL: an acknowledged enqueue survives a Redis
// crash. Redis runs with
// appendonly yes and appendfsync always; producers enqueue jobs with distinct JobIds as fast
// as they can while Redis is killed with SIGKILL. After a restart every job whose Enqueue
// returned nil (acknowledged) is on the pending list; jobs whose Enqueue failed may or may
// not be there (the write may have reached the AOF before the connection broke). Half the
// producers enqueue jobs with records (EnqueueJob: caller ids, every third delayed an hour):
// each acknowledged one is after the restart in its place — pending, or the scheduled set —
// exactly once, with its record in the same state.
func TestRedisCrash_AcknowledgedEnqueuesSurviveSIGKILL(t *testing.T) {
	const producers = 8
	srv := redistest.StartStandalone(t, redistest.WithAppendOnly(true))
	// No command retries and one dial attempt: while Redis is down calls fail fast instead of
	// retrying a write whose outcome is unknown.
	c := redis.NewClient(&redis.Options{
		Addr: srv.Addr, MaxRetries: -1, DialerRetries: 1,
		DialTimeout: 200 * time.Millisecond, ReadTimeout: time.Second, WriteTimeout: time.Second,
		PoolSize: producers,
	})
	t.Cleanup(func() { _ = c.Close() })
	b := mustBroker(t, c, redisqueue.Options{})
	q := "jobs"
	ctx := context.Background()

	type result struct {
		acked, failed []string // JobIds
		firstErr      error
	}
	results := make([]result, producers)
	var total atomic.Int64
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			r := &results[p]
			for i := 0; ; i++ {
				m := queuetest.Message(int64(p*10_000_000 + i + 1))
				var err error
				if p%2 == 0 {
					err = b.Enqueue(ctx, q, m)
				} else {
					opts := queue.JobOptions{ID: fmt.Sprintf("job-%d-%d", p, i)}
					if i%3 == 0 {
						opts.Delay = time.Hour
					}
					var req queue.JobRequest
					if req, err = queue.NewJobRequest(time.Now(), m.Payload, opts); err != nil {
						t.Error(err)
						return
					}
					m = req.Message
					_, _, err = b.EnqueueJob(ctx, q, req)
				}
				if err == nil {
					r.acked = append(r.acked, m.JobID)
					total.Add(1)
					continue
				}
				r.failed = append(r.failed, m.JobID)
				if r.firstErr == nil {
					r.firstErr = err
				}
				if len(r.failed) >= 3 { // Redis is gone: stop after a few failures
					return
				}
			}
		})
	}
	// Kill mid-stream, once the producers are going at full speed.
	deadline := time.Now().Add(30 * time.Second)
	for total.Load() < 5000 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	before := total.Load()
	srv.Kill(t)
	wg.Wait()
	if before == 0 {
		t.Fatal("no enqueue succeeded before the kill")
	}

	acked := map[string]bool{}
	unacked := map[string]bool{}
	for p, r := range results {
		if r.firstErr == nil {
			t.Fatalf("producer %d saw no error although Redis was killed", p)
		}
		if !redstate.IsCode(r.firstErr, redstate.EUNAVAILABLE) {
			t.Errorf("producer %d: first error %v, want EUNAVAILABLE", p, r.firstErr)
		}
		for _, id := range r.acked {
			acked[id] = true
		}
		for _, id := range r.failed {
			unacked[id] = true
		}
	}

	srv.Restart(t)
	raw := srv.Client(t)
	keys := queue.NewKeys(redstate.Prefix("", q), false)
	list, err := raw.LRange(ctx, keys.Pending, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	scheduled, err := raw.ZRange(ctx, keys.Scheduled, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	present := make(map[string]bool, len(list))
	records := 0
	for i, s := range append(list, scheduled...) {
		m, err := queue.DecodeMessage([]byte(s))
		if err != nil {
			t.Fatalf("pending message %q after restart: %v", s, err)
		}
		if present[m.JobID] {
			t.Errorf("job %s is on the pending list twice", m.JobID)
		}
		present[m.JobID] = true
		if m.Job == nil {
			continue
		}
		records++
		place := queue.StatePending
		if i >= len(list) {
			place = queue.StateScheduled
		}
		if st := raw.HGet(ctx, keys.Job(m.JobID), "state").Val(); st != string(place) {
			t.Errorf("job %s is %s but its record says %q", m.JobID, place, st)
		}
	}
	if recs, err := raw.Keys(ctx, keys.JobPrefix+"*").Result(); err != nil || len(recs) != records {
		t.Errorf("%d job records (%v) for %d jobs with records in place", len(recs), err, records)
	}
	missing, unackedPresent, unknown := 0, 0, 0
	for id := range acked {
		if !present[id] {
			if missing < 10 {
				t.Errorf("acknowledged job %s is missing after the Redis restart", id)
			}
			missing++
		}
	}
	for id := range present {
		switch {
		case unacked[id]:
			unackedPresent++
		case !acked[id]:
			unknown++
		}
	}
	t.Logf("acknowledged %d (%d at the kill), present after restart %d (%d with records, %d scheduled), missing %d, "+
		"unacknowledged %d of which present %d", len(acked), before, len(present), records, len(scheduled), missing, len(unacked), unackedPresent)
	if missing > 0 {
		t.Fatalf("%d of %d acknowledged jobs were lost", missing, len(acked))
	}
	if unknown > 0 {
		t.Fatalf("%d jobs on the pending list were never enqueued", unknown)
	}
	if len(present) != len(acked)+unackedPresent {
		t.Fatalf("present %d != acknowledged %d + unacknowledged present %d", len(present), len(acked), unackedPresent)
	}
}
