package bench

import (
	"context"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/internal/keyspace"
	"github.com/redstate/redstate/redisconn"
)

// UnlinkPrefix removes every key starting with prefix (the prefix glob-escaped) and returns how
// many it removed. See UnlinkMatching.
func UnlinkPrefix(ctx context.Context, client redis.UniversalClient, prefix string) (int64, error) {
	return UnlinkMatching(ctx, client, keyspace.GlobEscape(prefix)+"*")
}

// UnlinkMatching removes every key matching the SCAN glob pattern, on every master of a
// Cluster, with pipelined single-key UNLINKs (a multi-key UNLINK fails with CROSSSLOT on a
// Cluster node whose keys span slots), and returns how many it removed. Benchmarks use it to
// leave no key behind.
func UnlinkMatching(ctx context.Context, client redis.UniversalClient, pattern string) (int64, error) {
	var removed atomic.Int64
	err := redisconn.ScanMasters(ctx, client, pattern, func(ctx context.Context, node redis.Cmdable, keys []string) error {
		cmds, err := node.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, k := range keys {
				p.Unlink(ctx, k)
			}
			return nil
		})
		for _, cmd := range cmds {
			removed.Add(cmd.(*redis.IntCmd).Val())
		}
		return err
	})
	return removed.Load(), err
}
