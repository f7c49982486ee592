package redisfeed_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/feed"
	"github.com/redstate/redstate/feed/feedtest"
	"github.com/redstate/redstate/feed/redisfeed"
	"github.com/redstate/redstate/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func TestCacheSuite(t *testing.T) {
	redistest.RunOnTopologies(t, func(t *testing.T, client redis.UniversalClient) {
		c := redisfeed.New(client, redstate.KeyPrefix{})
		feedtest.RunCacheSuite(t, func(*testing.T) feed.Cache { return c })
	})
}

// TestExpiry_BuiltNeverOutlivesASet: a set created by a fan-out, a read mark or a rebuild gets
// the set TTL, which fan-outs and read marks do not renew (that would cost a command per
// follower or read); the built marker gets the shorter state TTL only from a rebuild, which
// renews every set of the state, the hybrid authors' unread sets included. So a built state
// never misses an expired set or read mark.
func TestExpiry_BuiltNeverOutlivesASet(t *testing.T) {
	redistest.RunOnTopologies(t, func(t *testing.T, rc redis.UniversalClient) {
		ctx := context.Background()
		c := redisfeed.New(rc, redstate.Prefix("", feedtest.UniquePrefix()))
		k := c.Keys()
		u, a, b, d := feedtest.ID(), feedtest.ID(), feedtest.ID(), feedtest.ID()
		ref := func(id int64) feed.PostRef { return feed.PostRef{ID: id, CreateTime: time.UnixMilli(id)} }
		pttl := func(key string) time.Duration {
			t.Helper()
			d, err := rc.PTTL(ctx, key).Result()
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
		// A fan-out to a user without state creates the set with the set TTL, no marker.
		if _, err := c.FanOut(ctx, a, ref(1), []int64{u}); err != nil {
			t.Fatal(err)
		}
		if d := pttl(k.Unread(u, a)); d <= feed.StateTTL || d > feed.SetTTL {
			t.Errorf("new unread set TTL = %v, want more than %v and at most %v", d, feed.StateTTL, feed.SetTTL)
		}
		if n, err := rc.Exists(ctx, k.Built(u)).Result(); err != nil || n != 0 {
			t.Errorf("a fan-out created the built marker (%d, %v)", n, err)
		}
		// Later fan-outs leave an existing set's expiry alone; a new author's set gets the TTL.
		if err := rc.PExpire(ctx, k.Unread(u, a), 2*time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := c.FanOut(ctx, a, ref(2), []int64{u}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.FanOut(ctx, b, ref(3), []int64{u}); err != nil {
			t.Fatal(err)
		}
		if d := pttl(k.Unread(u, a)); d > 2*time.Hour {
			t.Errorf("a fan-out to an existing set renewed it to %v", d)
		}
		if d := pttl(k.Unread(u, b)); d <= feed.StateTTL || d > feed.SetTTL {
			t.Errorf("set created by a fan-out: TTL %v", d)
		}
		// A read mark creates the unread set of an author without one (the read overtook the
		// fan-out, or the author is hybrid), with the set TTL; it writes no read set.
		h := feedtest.ID()
		for _, author := range []int64{d, h} {
			if _, err := c.MarkRead(ctx, u, author, 4); err != nil {
				t.Fatal(err)
			}
			if d := pttl(k.Unread(u, author)); d <= feed.StateTTL || d > feed.SetTTL {
				t.Errorf("unread set created by a read mark: TTL %v", d)
			}
		}
		if n, err := rc.Exists(ctx, k.Read(u)).Result(); err != nil || n != 0 {
			t.Errorf("a read mark created the read set (%d, %v)", n, err)
		}
		// A rebuild sets the marker to the state TTL and renews every set of the state beyond it:
		// those of the fan-out authors, the read set, and the unread sets of the hybrid authors,
		// which hold the read marks made since the last rebuild (here one older than the marker).
		if err := rc.PExpire(ctx, k.Unread(u, h), 2*time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
		st := feed.UserState{Unread: map[int64][]feed.PostRef{a: {ref(1), ref(2)}, b: {}}, Read: map[int64][]int64{b: {3}}, Hybrid: []int64{h}}
		if err := c.Rebuild(ctx, u, st); err != nil {
			t.Fatal(err)
		}
		built := pttl(k.Built(u))
		if built <= feed.StateTTL-time.Minute || built > feed.StateTTL {
			t.Errorf("built marker TTL %v, want about %v", built, feed.StateTTL)
		}
		for _, key := range []string{k.Unread(u, a), k.Unread(u, b), k.Read(u), k.Unread(u, h)} {
			if d := pttl(key); d <= built {
				t.Errorf("after a rebuild %s TTL %v is not beyond the built marker's %v", key, d, built)
			}
		}
		if r, err := c.ReadOf(ctx, u, h, []int64{4}); err != nil || !r[4] {
			t.Errorf("after a rebuild the hybrid author's read mark is gone: %v, %v", r, err)
		}
	})
}
