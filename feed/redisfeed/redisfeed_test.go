package redisfeed_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/feed"
	"github.com/redstate/redstate/feed/feedtest"
	"github.com/redstate/redstate/feed/redisfeed"
	"github.com/redstate/redstate/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func TestCacheSuite(t *testing.T) {
	t.Run("Standalone", func(t *testing.T) {
		c := redisfeed.New(redistest.SharedStandalone(t).Client(t), "")
		feedtest.RunCacheSuite(t, func(*testing.T) feed.Cache { return c })
	})
	t.Run("Cluster", func(t *testing.T) {
		c := redisfeed.New(redistest.SharedCluster(t).Client(t), "")
		feedtest.RunCacheSuite(t, func(*testing.T) feed.Cache { return c })
	})
}

// TestExpiry_CountsNeverOutliveASet: the counts hash gets the state TTL when a fan-out creates
// it and only from a rebuild after that; a set created by a fan-out, a read mark or a rebuild
// gets the longer set TTL. So a built user's counts hash never names an expired set, and
// fan-outs do not renew TTLs (which would cost two commands per follower).
func TestExpiry_CountsNeverOutliveASet(t *testing.T) {
	for name, client := range map[string]func(*testing.T) redis.UniversalClient{
		"Standalone": func(t *testing.T) redis.UniversalClient { return redistest.SharedStandalone(t).Client(t) },
		"Cluster":    func(t *testing.T) redis.UniversalClient { return redistest.SharedCluster(t).Client(t) },
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			rc := client(t)
			c := redisfeed.New(rc, feedtest.UniquePrefix())
			k := c.Keys()
			u, a, b := feedtest.ID(), feedtest.ID(), feedtest.ID()
			ref := func(id int64) feed.PostRef { return feed.PostRef{ID: id, CreateTime: time.UnixMilli(id)} }
			pttl := func(key string) time.Duration {
				t.Helper()
				d, err := rc.PTTL(ctx, key).Result()
				if err != nil {
					t.Fatal(err)
				}
				return d
			}
			// A fan-out to a user without state creates the counts hash and the set with TTLs.
			if _, err := c.FanOut(ctx, a, ref(1), []int64{u}); err != nil {
				t.Fatal(err)
			}
			if d := pttl(k.Counts(u)); d <= feed.StateTTL-time.Minute || d > feed.StateTTL {
				t.Errorf("new counts hash TTL = %v, want about %v", d, feed.StateTTL)
			}
			if d := pttl(k.Unread(u, a)); d <= feed.StateTTL {
				t.Errorf("new unread set TTL = %v, want more than the counts hash's %v", d, feed.StateTTL)
			}
			// Later fan-outs, to the same author's set and to a new author's, leave the counts
			// hash's expiry alone; the new set gets the set TTL.
			if err := rc.PExpire(ctx, k.Counts(u), time.Hour).Err(); err != nil {
				t.Fatal(err)
			}
			if err := rc.PExpire(ctx, k.Unread(u, a), 2*time.Hour).Err(); err != nil {
				t.Fatal(err)
			}
			if _, err := c.FanOut(ctx, a, ref(2), []int64{u}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.FanOut(ctx, b, ref(3), []int64{u}); err != nil {
				t.Fatal(err)
			}
			if d := pttl(k.Counts(u)); d > time.Hour {
				t.Errorf("a fan-out extended the counts hash to %v", d)
			}
			if d := pttl(k.Unread(u, a)); d > 2*time.Hour {
				t.Errorf("a fan-out to an existing set renewed it to %v", d)
			}
			if d := pttl(k.Unread(u, b)); d <= feed.StateTTL {
				t.Errorf("set created by a fan-out: TTL %v", d)
			}
			// A read mark creates the read set with the set TTL.
			if _, err := c.MarkRead(ctx, u, b, 3); err != nil {
				t.Fatal(err)
			}
			if d := pttl(k.Read(u)); d <= feed.StateTTL {
				t.Errorf("read set TTL %v", d)
			}
			// A rebuild renews everything: counts to the state TTL, sets beyond it.
			st := feed.UserState{Unread: map[int64][]feed.PostRef{a: {ref(1), ref(2)}}, Read: []int64{3}}
			if err := c.Rebuild(ctx, u, st); err != nil {
				t.Fatal(err)
			}
			counts := pttl(k.Counts(u))
			if counts <= feed.StateTTL-time.Minute {
				t.Errorf("rebuilt counts TTL %v", counts)
			}
			for _, key := range []string{k.Unread(u, a), k.Read(u)} {
				if d := pttl(key); d <= counts {
					t.Errorf("after a rebuild %s TTL %v is not beyond the counts hash's %v", key, d, counts)
				}
			}
		})
	}
}
