package redisconn

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// IsCluster reports whether client talks to a Redis Cluster: the one test every block makes
// before it hash-tags keys, groups work by node or walks every master.
func IsCluster(client redis.UniversalClient) bool { return AsCluster(client) != nil }

// AsCluster returns client as a cluster client, or nil unless it talks to a Redis Cluster, for
// the Cluster-only calls a block makes itself (MasterForKey, CLUSTER SLOTS, ReloadState).
func AsCluster(client redis.UniversalClient) *redis.ClusterClient {
	cc, _ := client.(*redis.ClusterClient)
	return cc
}

// ForEachMaster runs fn on every master client writes to: each master of a Cluster, all at
// once (go-redis's ClusterClient.ForEachMaster), or client itself on a standalone server or
// behind Sentinel. It returns the first error fn returned.
func ForEachMaster(ctx context.Context, client redis.UniversalClient, fn func(ctx context.Context, node redis.Cmdable) error) error {
	if cc := AsCluster(client); cc != nil {
		return cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error { return fn(ctx, node) })
	}
	return fn(ctx, client)
}

// scanCount is the COUNT of ScanMasters's SCAN calls.
const scanCount = 1000

// ScanMasters walks every master (ForEachMaster) with SCAN MATCH pattern and calls fn with
// the node and the keys of each SCAN reply that found some; on Cluster fn runs on several
// masters at once. SCAN's guarantee holds: a key present for the whole walk is passed at least
// once (possibly twice); keys written or deleted meanwhile may or may not be. The walk of a
// node stops at the first error of SCAN or fn, and ScanMasters returns it.
func ScanMasters(ctx context.Context, client redis.UniversalClient, pattern string, fn func(ctx context.Context, node redis.Cmdable, keys []string) error) error {
	return ForEachMaster(ctx, client, func(ctx context.Context, node redis.Cmdable) error {
		var cursor uint64
		for {
			keys, next, err := node.Scan(ctx, cursor, pattern, scanCount).Result()
			if err != nil {
				return err
			}
			if len(keys) > 0 {
				if err := fn(ctx, node, keys); err != nil {
					return err
				}
			}
			if next == 0 {
				return nil
			}
			cursor = next
		}
	})
}
