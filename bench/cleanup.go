package bench

import (
	"context"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/internal/keyspace"
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
	clean := func(ctx context.Context, c redis.Cmdable) error {
		iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
		batch := make([]string, 0, 500)
		flush := func() error {
			if len(batch) == 0 {
				return nil
			}
			cmds, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
				for _, k := range batch {
					p.Unlink(ctx, k)
				}
				return nil
			})
			for _, cmd := range cmds {
				removed.Add(cmd.(*redis.IntCmd).Val())
			}
			batch = batch[:0]
			return err
		}
		for iter.Next(ctx) {
			batch = append(batch, iter.Val())
			if len(batch) == cap(batch) {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		if err := iter.Err(); err != nil {
			return err
		}
		return flush()
	}
	var err error
	if cc, ok := client.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return clean(ctx, c) })
	} else {
		err = clean(ctx, client)
	}
	return removed.Load(), err
}
