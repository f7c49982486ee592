package periodic_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue/periodic"
	"github.com/redstate/redstate/redistest"
)

// uniqueNS returns a fresh namespace, so that tests sharing a server never see each other.
func uniqueNS() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "t" + hex.EncodeToString(b[:]) + "-"
}

func redisStore(t *testing.T, c redis.UniversalClient, keys periodic.Keys) periodic.Store {
	t.Helper()
	s, err := periodic.NewRedisStore(c, keys)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStore_Memory(t *testing.T) { runStoreSuite(t, periodic.NewMemoryStore()) }

func TestStore_Redis(t *testing.T) {
	redistest.RunOnTopologies(t, func(t *testing.T, c redis.UniversalClient) {
		runStoreSuite(t, redisStore(t, c, periodic.NewKeys(redstate.Prefix(uniqueNS(), ""))))
	})
}

// runStoreSuite checks Store's rules: Init only creates, Begin claims a later tick and refuses
// a smaller fence with ErrStale, a done tick is not begun again, a re-claim of the same tick
// keeps its first claim time, a copy of a call changes nothing, Finish needs the record's tick
// and fence.
func runStoreSuite(t *testing.T, s periodic.Store) {
	ctx := context.Background()
	t0 := time.Unix(1_736_900_000, 0)
	claim := t0.Add(300 * time.Millisecond)
	want := func(what string, got periodic.Record, at time.Time, fence int64, done bool, claimed time.Time) {
		t.Helper()
		if !got.At.Equal(at) || got.Fence != fence || got.Done != done || !got.Claimed.Equal(claimed) {
			t.Fatalf("%s: record %+v; want at %d fence %d done %v claimed %s", what, got, at.Unix(), fence, done, claimed)
		}
	}
	r, err := s.Init(ctx, "e", periodic.Record{At: t0, Fence: 10, Done: true, Claimed: claim})
	if err != nil {
		t.Fatal(err)
	}
	want("init", r, t0, 10, true, claim)
	r, err = s.Init(ctx, "e", periodic.Record{At: t0.Add(time.Hour), Fence: 99, Claimed: claim})
	if err != nil {
		t.Fatal(err)
	}
	want("second init", r, t0, 10, true, claim)

	if _, begun, err := s.Begin(ctx, "e", t0, 10, claim); err != nil || begun {
		t.Fatalf("begin a done tick = %v, %v; want not begun", begun, err)
	}
	t1, now1 := t0.Add(time.Minute), t0.Add(time.Minute+time.Second)
	for range 2 { // the second call is a copy
		r, begun, err := s.Begin(ctx, "e", t1, 10, now1)
		if err != nil || !begun {
			t.Fatalf("begin the next tick = %v, %v", begun, err)
		}
		want("begun", r, t1, 10, false, now1)
	}
	if _, _, err := s.Begin(ctx, "e", t1, 9, now1); !errors.Is(err, periodic.ErrStale) || !redstate.IsCode(err, redstate.ECONFLICT) {
		t.Fatalf("begin with a smaller fence = %v; want ErrStale (conflict)", err)
	}
	// A takeover re-claims the unfinished tick: its first claim time stays.
	r, begun, err := s.Begin(ctx, "e", t1, 11, now1.Add(5*time.Second))
	if err != nil || !begun {
		t.Fatalf("re-claim by a newer leader = %v, %v", begun, err)
	}
	want("re-claimed", r, t1, 11, false, now1)
	if err := s.Finish(ctx, "e", t1, 10); !errors.Is(err, periodic.ErrStale) {
		t.Fatalf("finish by the older leader = %v; want ErrStale", err)
	}
	for range 2 {
		if err := s.Finish(ctx, "e", t1, 11); err != nil {
			t.Fatalf("finish = %v", err)
		}
	}
	r, _ = s.Init(ctx, "e", periodic.Record{})
	want("finished", r, t1, 11, true, now1)
	if r, begun, err := s.Begin(ctx, "e", t0, 12, now1); err != nil || begun {
		t.Fatalf("begin an earlier tick = %+v, %v, %v; want not begun", r, begun, err)
	}
	if err := s.Finish(ctx, "other", t1, 11); !errors.Is(err, periodic.ErrStale) {
		t.Fatalf("finish without a record = %v; want ErrStale", err)
	}
}
