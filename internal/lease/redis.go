package lease

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/rediserr"
)

var _ Store = (*Redis)(nil)

// RedisOptions configure a Redis lease store. The zero value sends each call on the client.
type RedisOptions struct {
	// AutoPipeline sends the acquire, renew and release scripts through the client's blocking
	// autopipeliner (go-redis AutoPipeline, shared by everything that asks the client for it
	// and stopped when the client closes): the calls of concurrent callers are written to Redis
	// in one pipeline and their replies read back in one read, which saves system calls on both
	// sides when many leases are taken at once; each caller still waits for its own reply, so a
	// call takes one round trip as on the client. Holder always uses the client.
	//
	// Leave it off when the client carries redisconn's durability hook
	// (redis.durability.wait-replicas): the autopipeliner runs a lone caller's command through
	// the client's per-command hooks outside any Conn, where that hook sends the write and its
	// WAIT as two calls that may take two pooled connections, so the WAIT would not cover the
	// write.
	AutoPipeline bool
	// Stream, with AutoPipeline, asks the client for its full-duplex autopipeliner (go-redis
	// AutoPipelineOptions.FullDuplex): one held connection per server on which each call is
	// written as soon as it is made, while a reader takes the replies as they come, instead of
	// one batch written and its replies read before the next batch leaves. With a few dozen
	// concurrent callers the server then never idles during a round trip. The client caches
	// one autopipeliner: whichever of AutoPipeline's two forms is asked for first is the one
	// every later caller gets.
	Stream bool
}

// Redis is the Redis Store: each lease key a String holding the holder's token with a PX TTL,
// each fence counter a String holding the last fence with a PX TTL (CounterTTL). Acquire,
// renew and release are one script each (scripts.go; EVALSHA, then EVAL when the server
// answers NOSCRIPT), so they work on a standalone server, behind Sentinel (a failover
// *redis.Client) and on Cluster (the two keys share a slot: Keys.Validate).
type Redis struct {
	client redis.UniversalClient
	// scripts runs the scripts: the client, or its autopipeliner (RedisOptions.AutoPipeline).
	scripts redis.Scripter
}

// NewRedis returns the lease store on client. Errors: EINVALID (no client, or AutoPipeline
// and the client gives no autopipeliner, e.g. it is closed).
func NewRedis(client redis.UniversalClient, opts RedisOptions) (*Redis, error) {
	if client == nil {
		return nil, redstate.Errorf(redstate.EINVALID, "lease: a Redis client is required")
	}
	if !opts.AutoPipeline {
		return &Redis{client: client, scripts: client}, nil
	}
	var ap *redis.AutoPipeliner
	var err error
	if opts.Stream {
		cfg := redis.DefaultBlockingAutoPipelineOptions()
		cfg.FullDuplex = true
		ap, err = client.AutoPipelineWithOptions(cfg)
	} else {
		ap, err = client.AutoPipeline()
	}
	if err != nil {
		return nil, redstate.Wrap(redstate.EINVALID, err, "lease: the Redis client gives no autopipeliner")
	}
	return &Redis{client: client, scripts: ap}, nil
}

// run runs script on r.scripts. A context already done fails at once, as on the client. One
// that ends while the script waits in the autopipeliner does not cut the call short: the
// autopipeliner runs commands on its own context, so the call returns when the reply is in or
// the client's read or write timeout ends it (go-redis: per-command deadlines are not honored
// once a command is queued).
func (r *Redis) run(ctx context.Context, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	if err := ctx.Err(); err != nil {
		cmd := redis.NewCmd(ctx)
		cmd.SetErr(err)
		return cmd
	}
	return script.Run(ctx, r.scripts, keys, args...)
}

// TryAcquire implements Store (acquireScript).
func (r *Redis) TryAcquire(ctx context.Context, keys Keys, token string, ttl time.Duration) (int64, bool, error) {
	if err := checkCall(keys, token, ttl, true); err != nil {
		return 0, false, err
	}
	fence, err := r.run(ctx, acquireScript, []string{keys.Lease, keys.Fence}, token, ms(ttl), ms(CounterTTL(ttl))).Int64()
	if err != nil {
		return 0, false, rediserr.Map(err, "acquire lease "+keys.Lease)
	}
	return fence, fence != 0, nil
}

// Renew implements Store (renewScript).
func (r *Redis) Renew(ctx context.Context, keys Keys, token string, ttl time.Duration) (bool, error) {
	if err := checkCall(keys, token, ttl, true); err != nil {
		return false, err
	}
	n, err := r.run(ctx, renewScript, []string{keys.Lease}, token, ms(ttl)).Int()
	if err != nil {
		return false, rediserr.Map(err, "renew lease "+keys.Lease)
	}
	return n == 1, nil
}

// Release implements Store (deleteIfScript).
func (r *Redis) Release(ctx context.Context, keys Keys, token string) (bool, error) {
	if err := checkCall(keys, token, 0, false); err != nil {
		return false, err
	}
	n, err := r.run(ctx, deleteIfScript, []string{keys.Lease}, token).Int()
	if err != nil {
		return false, rediserr.Map(err, "release lease "+keys.Lease)
	}
	return n == 1, nil
}

// Holder implements Store: one GET on the client.
func (r *Redis) Holder(ctx context.Context, keys Keys) (string, error) {
	if err := keys.Validate(); err != nil {
		return "", err
	}
	v, err := r.client.Get(ctx, keys.Lease).Result()
	if err == redis.Nil {
		return "", nil
	}
	if err != nil {
		return "", rediserr.Map(err, "read the holder of lease "+keys.Lease)
	}
	return v, nil
}

// DeleteIf deletes key on c only while it holds value (deleteIfScript, the compare-and-delete
// of Release), for keys that are set with a caller's token or id and must be removed only by
// it: a claim rolled back, an index entry that must still name one task. deleted false when
// the key was missing or held another value. Errors are mapped as rediserr.Map does.
func DeleteIf(ctx context.Context, c redis.Scripter, key, value string) (deleted bool, err error) {
	n, err := deleteIfScript.Run(ctx, c, []string{key}, value).Int()
	if err != nil {
		return false, rediserr.Map(err, "delete "+key+" if it holds the value")
	}
	return n == 1, nil
}

// ms formats d in whole milliseconds (at least 1) for PX and PEXPIRE arguments.
func ms(d time.Duration) int64 { return max(int64(d/time.Millisecond), 1) }
