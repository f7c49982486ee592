package buildstatusbench

import (
	"context"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/internal/keyspace"
)

// Cleanup removes every key under keys.Prefix with SCAN MATCH (the prefix glob-escaped) and
// UNLINK (pipelined), on every master of a Cluster, and returns how many keys it removed.
func Cleanup(ctx context.Context, client redis.UniversalClient, keys buildstatus.Keys) (int64, error) {
	pattern := keyspace.GlobEscape(keys.Prefix) + "*"
	var removed atomic.Int64
	clean := func(ctx context.Context, c redis.Cmdable) error {
		iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
		batch := make([]string, 0, 500)
		flush := func() error {
			if len(batch) == 0 {
				return nil
			}
			// One UNLINK per key in one pipeline: a multi-key UNLINK fails with CROSSSLOT on
			// Cluster, where one node's keys span many slots.
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
