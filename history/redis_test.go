package history_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/history"
	"github.com/redstate/redstate/history/historytest"
	"github.com/redstate/redstate/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// namespaces makes every opened backend a namespace of its own on the shared servers.
var namespaces atomic.Int64

// redisBackend opens Redis stores under a fresh namespace of client.
func redisBackend(client redis.UniversalClient) historytest.Backend {
	return func(t *testing.T, now func() time.Time) func() history.Store {
		keys := history.NewKeys(redstate.Prefix(fmt.Sprintf("t%d-", namespaces.Add(1)), ""))
		return func() history.Store { return history.NewRedisStore(client, keys, now) }
	}
}

func TestRedisStore_Conformance(t *testing.T) {
	redistest.RunOnTopologies(t, func(t *testing.T, client redis.UniversalClient) {
		historytest.Run(t, redisBackend(client))
	})
}

// Every bucket expires at its start plus its tier's retention, whichever instance wrote it.
func TestRedisStore_BucketsExpireAtStartPlusRetention(t *testing.T) {
	client := redistest.SharedStandalone(t).Client(t)
	t0 := time.Now().Truncate(time.Minute).Add(37 * time.Second)
	keys := history.NewKeys(redstate.Prefix("exp-", ""))
	store := history.NewRedisStore(client, keys, func() time.Time { return t0 })
	b := history.Batch{Counts: []history.Count{{Second: t0.Unix(), Field: "queue.done\x1fq", N: 1}}, Up: []int64{t0.Unix()},
		Seen: map[string]int64{"queue.done\x1fq": t0.Unix()}}
	if err := store.Write(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	for _, tier := range history.Tiers {
		start := tier.Start(t0.Unix())
		got, err := client.ExpireTime(t.Context(), keys.Bucket(tier, start)).Result()
		if err != nil {
			t.Fatal(err)
		}
		if want := time.Duration(start)*time.Second + tier.Retention; got != want {
			t.Errorf("tier %s: EXPIRETIME = %v, want %v (bucket start %d + %v)", tier.Window, got, want, start, tier.Retention)
		}
	}
	if ttl, err := client.TTL(t.Context(), keys.Series()).Result(); err != nil || ttl <= 24*time.Hour {
		t.Errorf("registry TTL = %v %v, want a day and more", ttl, err)
	}
}

// Redis stopped mid-traffic: recording goes on, the flushes meanwhile fail and their events
// are counted as dropped, and once Redis is back the next flush is written again.
func TestRecorder_RedisStoppedMidTraffic(t *testing.T) {
	srv := redistest.StartStandalone(t, redistest.WithAppendOnly(true)) // the restart keeps the data
	client := srv.Client(t)
	t0 := time.Now().Truncate(time.Minute)
	clock := historytest.NewClock(t0)
	store := history.NewRedisStore(client, history.NewKeys(redstate.Prefix("", "")), clock.Now)
	rec, err := history.NewRecorder(history.Options{Store: store, Now: clock.Now, FlushTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	rec.Add(history.QueueDone, 5, "q")
	if err := rec.FlushAll(t.Context()); err != nil {
		t.Fatal(err)
	}

	srv.Stop(t)
	clock.Add(time.Second)
	for range 1000 {
		rec.Add(history.QueueDone, 1, "q") // never touches Redis: returns at once
	}
	rec.Set(history.QueueSize, 3, "q", "pending")
	err = rec.FlushAll(t.Context())
	if !redstate.IsCode(err, redstate.EUNAVAILABLE) {
		t.Fatalf("flush with Redis stopped = %v, want EUNAVAILABLE", err)
	}
	if st := rec.Stats(); st.Dropped != 1001 || st.FailedFlushes != 3 || !rec.Failing() {
		t.Fatalf("stats = %+v failing %v, want 1001 dropped events in 3 failed writes (one per tier)", st, rec.Failing())
	}

	srv.Restart(t)
	clock.Add(time.Second)
	rec.Add(history.QueueDone, 2, "q")
	if err := rec.FlushAll(t.Context()); err != nil {
		t.Fatalf("flush after Redis is back: %v", err)
	}
	if rec.Failing() {
		t.Error("still failing after a flush succeeded")
	}
	res, err := history.NewReader(store, func() time.Time { return t0.Add(time.Minute) }).Read(t.Context(),
		history.Query{Metrics: []string{history.QueueDone}, Window: "15m"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64]any{}
	for i, at := range res.Times {
		if at >= t0.Unix() && at <= t0.Unix()+2 {
			if v := res.Series[0].Values[i]; v != nil {
				got[at-t0.Unix()] = *v
			} else {
				got[at-t0.Unix()] = nil
			}
		}
	}
	// The second of the outage reads null: nobody's record of it reached Redis.
	if got[0] != 5.0 || got[1] != nil || got[2] != 2.0 {
		t.Errorf("queue.done at t0, t0+1, t0+2 = %v, want 5, null, 2", got)
	}
}
