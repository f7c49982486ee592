package redisfeed_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/feed"
	"github.com/redstate/redstate/feed/feedtest"
	"github.com/redstate/redstate/feed/redisfeed"
	"github.com/redstate/redstate/redistest"
)

// checkNewSets fails t unless each follower's unread set holds exactly the post (unread) and
// the marker and expires within the set TTL from now; with oneCall (the followers were served
// by one script: a standalone server), every one at the same time.
func checkNewSets(t *testing.T, rc redis.UniversalClient, c *redisfeed.Cache, author int64, ref feed.PostRef, followers []int64, oneCall bool) {
	t.Helper()
	ctx := context.Background()
	var expiry time.Time
	for _, u := range followers {
		key := c.Keys().Unread(u, author)
		zs, err := rc.ZRangeWithScores(ctx, key, 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("[{%v } {%d %d}]", math.Inf(-1), ref.CreateTime.UnixMilli(), ref.ID)
		if got := fmt.Sprintf("%v", zs); len(zs) != 2 || zs[0].Member != "" || !math.IsInf(zs[0].Score, -1) ||
			zs[1].Member != fmt.Sprint(ref.ID) || int64(zs[1].Score) != ref.CreateTime.UnixMilli() {
			t.Errorf("follower %d: set %s, want %s", u, got, want)
		}
		at, err := rc.PExpireTime(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		exp := time.UnixMilli(at.Milliseconds())
		if left := time.Until(exp); left <= feed.StateTTL || left > feed.SetTTL {
			t.Errorf("follower %d: set expires in %v", u, left)
		}
		if expiry.IsZero() {
			expiry = exp
		} else if oneCall && !exp.Equal(expiry) {
			t.Errorf("follower %d: set expires at %v, the others at %v", u, exp, expiry)
		}
	}
}

// TestFanOut_RestoredSetsEqualCreatedOnes: in one fan-out call, the first new set is created
// with ZADD and PEXPIREAT and the next new ones are RESTOREd copies of it. Followers who hold a
// set (the post read, another post, a duplicate id) in between make a RESTORE fail and are
// served by ZADD NX; every new set holds exactly the post and the marker with the expiry of the
// call's first new set, the held sets keep their content and expiry.
func TestFanOut_RestoredSetsEqualCreatedOnes(t *testing.T) {
	redistest.RunOnTopologies(t, func(t *testing.T, rc redis.UniversalClient) {
		ctx := context.Background()
		c := redisfeed.New(rc, redstate.Prefix("", feedtest.UniquePrefix()))
		k := c.Keys()
		a := feedtest.ID()
		ref := feed.PostRef{ID: feedtest.ID(), CreateTime: time.UnixMilli(time.Now().UnixMilli())}
		other := feed.PostRef{ID: feedtest.ID(), CreateTime: ref.CreateTime.Add(-time.Second)}
		var f [9]int64
		for i := range f {
			f[i] = feedtest.ID()
		}
		read, holder := f[3], f[6]
		if _, err := c.MarkRead(ctx, read, a, ref.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := c.FanOut(ctx, a, other, []int64{holder}); err != nil {
			t.Fatal(err)
		}
		if err := rc.PExpire(ctx, k.Unread(holder, a), 2*time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
		var restores int
		standalone, isStandalone := rc.(*redis.Client)
		if isStandalone {
			restores = redistest.CommandCalls(t, standalone, "restore")
		}
		followers := []int64{f[1], f[2], f[2], read, f[4], f[5], holder, f[7], f[8]}
		n, err := c.FanOut(ctx, a, ref, followers)
		if err != nil || n != 7 {
			t.Fatalf("FanOut = %d, %v; want 7 (all but the duplicate and the read post)", n, err)
		}
		checkNewSets(t, rc, c, a, ref, []int64{f[1], f[2], f[4], f[5], f[7], f[8]}, isStandalone)
		if isStandalone {
			// f2, f5 and f8 restored; the duplicate f2 and the holder refused.
			if got := redistest.CommandCalls(t, standalone, "restore") - restores; got < 5 {
				t.Errorf("%d RESTOREs, want at least 5: the copy path did not run", got)
			}
		}
		if zs, err := rc.ZRangeWithScores(ctx, k.Unread(read, a), 0, -1).Result(); err != nil || len(zs) != 2 || !math.IsInf(zs[1].Score, -1) {
			t.Errorf("the read post's set: %v, %v", zs, err)
		}
		if got, err := c.UnreadCounts(ctx, holder, []int64{a}); err != nil || got[a] != 2 {
			t.Errorf("holder's count = %v, %v; want 2", got, err)
		}
		if d, err := rc.PTTL(ctx, k.Unread(holder, a)).Result(); err != nil || d > 2*time.Hour {
			t.Errorf("holder's set TTL %v (%v): renewed by the fan-out", d, err)
		}
	})
}

// TestFanOut_WithoutRestoreOrDump: a Redis user whose ACL forbids DUMP and RESTORE (both are in
// @dangerous) still fans out: every new set is created by ZADD and PEXPIREAT.
func TestFanOut_WithoutRestoreOrDump(t *testing.T) {
	redistest.RunOnTopologies(t, func(t *testing.T, rc redis.UniversalClient) {
		admin, ok := rc.(*redis.Client)
		if !ok {
			t.Skip("ACL users are per node: the standalone server shows the fallback")
		}
		ctx := context.Background()
		user := fmt.Sprintf("feed-no-restore-%d", feedtest.ID())
		if err := admin.Do(ctx, "ACL", "SETUSER", user, "on", ">pw", "~*", "&*", "+@all", "-restore", "-dump").Err(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { admin.Do(context.Background(), "ACL", "DELUSER", user) })
		limited := redis.NewClient(&redis.Options{Addr: admin.Options().Addr, Username: user, Password: "pw"})
		t.Cleanup(func() { _ = limited.Close() })
		c := redisfeed.New(limited, redstate.Prefix("", feedtest.UniquePrefix()))
		a := feedtest.ID()
		ref := feed.PostRef{ID: feedtest.ID(), CreateTime: time.UnixMilli(time.Now().UnixMilli())}
		followers := []int64{feedtest.ID(), feedtest.ID(), feedtest.ID()}
		if n, err := c.FanOut(ctx, a, ref, followers); err != nil || n != 3 {
			t.Fatalf("FanOut = %d, %v; want 3", n, err)
		}
		checkNewSets(t, rc, c, a, ref, followers, true)
	})
}
