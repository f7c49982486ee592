package redisfeed

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/feed"
	"github.com/redstate/redstate/feed/feedtest"
	"github.com/redstate/redstate/internal/redisscript"
	"github.com/redstate/redstate/redistest"
)

// scriptCalls counts the script calls a client sends and those that failed.
type scriptCalls struct {
	mu            sync.Mutex
	calls, failed int
}

func (h *scriptCalls) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *scriptCalls) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.count([]redis.Cmder{cmd})
		return err
	}
}
func (h *scriptCalls) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		h.count(cmds)
		return err
	}
}

func (h *scriptCalls) count(cmds []redis.Cmder) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, cmd := range cmds {
		if name := strings.ToLower(cmd.Name()); name == "evalsha" || name == "eval" {
			if redisscript.NoScript(cmd.Err()) {
				continue // the load-and-retry of a script the node did not have yet
			}
			h.calls++
			if cmd.Err() != nil {
				h.failed++
			}
		}
	}
}

// followersHoldPost fails t unless every follower's unread set holds the post, unread.
func followersHoldPost(t *testing.T, client redis.UniversalClient, c *Cache, author int64, ref feed.PostRef, followers []int64) {
	t.Helper()
	for _, u := range followers {
		score, err := client.ZScore(context.Background(), c.keys.Unread(u, author), "42").Result()
		if err != nil || score != float64(ref.CreateTime.UnixMilli()) {
			t.Fatalf("follower %d: post score %v, %v; want %d", u, score, err, ref.CreateTime.UnixMilli())
		}
	}
}

func clusterFollowers(n int) []int64 {
	followers := make([]int64, n)
	for i := range followers {
		followers[i] = feedtest.ID()
	}
	return followers
}

// On Cluster the followers of a fan-out are grouped by node, not by slot: 600 followers over
// 3 masters take a handful of scripts, not one per slot (about 600).
func TestFanOut_ClusterScriptsPerNode(t *testing.T) {
	client := redistest.SharedCluster(t).Client(t)
	hook := &scriptCalls{}
	client.AddHook(hook)
	c := New(client, redstate.Prefix("", feedtest.UniquePrefix()))
	author, ref := feedtest.ID(), feed.PostRef{ID: 42, CreateTime: time.UnixMilli(1_700_000_000_000)}
	followers := clusterFollowers(600)

	added, err := c.FanOut(context.Background(), author, ref, followers)
	if err != nil {
		t.Fatal(err)
	}
	if added != len(followers) {
		t.Errorf("FanOut added %d, want %d", added, len(followers))
	}
	followersHoldPost(t, client, c, author, ref, followers)
	var masters atomic.Int64
	if err := client.ForEachMaster(context.Background(), func(context.Context, *redis.Client) error {
		masters.Add(1)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if max := len(followers)/fanOutGroup + int(masters.Load()); hook.calls > max || hook.failed > 0 {
		t.Errorf("fan-out to %d followers on %d masters sent %d scripts (%d failed), want at most %d and none failed",
			len(followers), masters.Load(), hook.calls, hook.failed, max)
	}
}

// A node group whose script fails (here: every follower in one group, as after a slot moved
// since the grouping) is sent again by slot, and every follower gets the post.
func TestFanOut_ClusterRegroupsBySlotWhenANodeGroupFails(t *testing.T) {
	client := redistest.SharedCluster(t).Client(t)
	hook := &scriptCalls{}
	client.AddHook(hook)
	c := New(client, redstate.Prefix("", feedtest.UniquePrefix()))
	c.nodeGroups = func(followers []int64) [][]int64 { return [][]int64{followers} }
	author, ref := feedtest.ID(), feed.PostRef{ID: 42, CreateTime: time.UnixMilli(1_700_000_000_000)}
	followers := clusterFollowers(60)

	added, err := c.FanOut(context.Background(), author, ref, followers)
	if err != nil {
		t.Fatalf("FanOut with a wrong node grouping: %v", err)
	}
	if hook.failed == 0 {
		t.Fatal("the script over followers of several nodes did not fail: the test does not test the fallback")
	}
	if added < 1 || added > len(followers) {
		t.Errorf("FanOut added %d, want 1..%d", added, len(followers))
	}
	followersHoldPost(t, client, c, author, ref, followers)
	// A retried fan-out finds every follower served.
	if again, err := c.FanOut(context.Background(), author, ref, followers); err != nil || again != 0 {
		t.Errorf("repeated FanOut = %d, %v; want 0, nil", again, err)
	}
}
