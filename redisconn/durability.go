package redisconn

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
)

// Durability makes every write wait for replicas before it is acknowledged (the configuration
// section redis.durability). With WaitReplicas 0 (the default) nothing changes.
type Durability struct {
	// WaitReplicas is how many replicas must have a write in memory before the command that made
	// it returns (WAIT after the write, on the same connection; on Redis Cluster, replicas of the
	// shard master that ran the write). Default 0: off.
	WaitReplicas int `koanf:"wait-replicas"`
	// WaitTimeout bounds each WAIT (whole milliseconds, default 100ms): a write that fewer than
	// WaitReplicas replicas acknowledge within it fails with ErrNotDurable.
	WaitTimeout time.Duration `koanf:"wait-timeout"`
}

// DefaultWaitTimeout is Durability.WaitTimeout's default: a replica on the same network
// acknowledges within a millisecond, so 100 ms rides out a short stall of one replica while an
// absent replica still fails a write well inside the default read timeout.
const DefaultWaitTimeout = 100 * time.Millisecond

// ErrNotDurable is in the chain of the EUNAVAILABLE error of a write that fewer replicas than
// redis.durability.wait-replicas acknowledged in time. The write was made on the master and may
// still be there (and reach the replicas later): the caller must not assume it is absent.
var ErrNotDurable = errors.New("redisconn: write not acknowledged by enough replicas")

// On reports whether writes wait for replicas.
func (d Durability) On() bool { return d.WaitReplicas > 0 }

// bypass marks the context of the commands the hook itself sends on a dedicated connection, so
// the hook's copy on that connection lets them through.
type bypass struct{}

// waitHook sends WAIT WaitReplicas WaitTimeout after every write, on the connection the write
// used, and turns a short count into ErrNotDurable on the write's command.
//
// go-redis copies a client's hooks into the Conn and Tx values made from it, and those use one
// connection for all their calls, while the client itself takes any pooled connection per call.
// The chains go-redis builds while AddHook installs the hook are the client's own (owned): they
// send a write and its WAIT in one pipeline, which go-redis runs on one connection. Chains built
// later belong to a Conn or Tx (one connection), where the write and a following WAIT share the
// connection anyway. Hence the limits: the hook must be the last one added to its client; a
// WithTimeout copy of the client would take the Conn path on pooled connections (redstate makes
// none); and MULTI/EXEC on a Conn or Tx (Watch) fails with EINTERNAL, since WAIT inside MULTI
// does not block and go-redis offers no plain call on a Tx's connection after EXEC.
type waitHook struct {
	client    *redis.Client
	replicas  int
	timeoutMs int64
	timeout   time.Duration
	installed atomic.Bool
}

// durable installs the WAIT hook on c when d is on and returns c. The hook must be the last
// one added to c (see waitHook).
func durable(c *redis.Client, d Durability) *redis.Client {
	if d.On() {
		installWaitHook(c, d)
		waiting.Store(c, true)
	}
	return c
}

// waiting holds the clients New made with writes waiting for replicas (WaitsForReplicas).
var waiting sync.Map

// WaitsForReplicas reports whether c was made by New with redis.durability on, so that each of
// its writes is followed by a WAIT on its connection. Such a client's autopipeliners must not
// be used for writes: they run a lone caller's command through the client's per-command hooks
// outside any Conn (and the full-duplex form after the write has left), where the WAIT may take
// another connection and not cover the write.
func WaitsForReplicas(c redis.UniversalClient) bool {
	_, ok := waiting.Load(c)
	return ok
}

// installWaitHook adds a WAIT hook for d to c and returns it.
func installWaitHook(c *redis.Client, d Durability) *waitHook {
	h := &waitHook{client: c, replicas: d.WaitReplicas, timeout: d.WaitTimeout, timeoutMs: d.WaitTimeout.Milliseconds()}
	c.AddHook(h)
	h.installed.Store(true)
	return h
}

// DialHook implements redis.Hook (unchanged).
func (h *waitHook) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook implements redis.Hook: a write is sent with WAIT on the same connection.
func (h *waitHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	owned := !h.installed.Load()
	return func(ctx context.Context, cmd redis.Cmder) error {
		if ctx.Value(bypass{}) != nil || !writes(cmd) {
			return next(ctx, cmd)
		}
		switch {
		case !owned:
			// A Conn or Tx: every call uses its one connection. next returns a command's
			// error without setting it (Process does, after the hooks).
			err := next(ctx, cmd)
			cmd.SetErr(err)
			if !succeeded(err) {
				return err
			}
			wait := h.waitCmd(ctx)
			wait.SetErr(next(ctx, wait))
			return h.check(wait, []redis.Cmder{cmd})
		case blocking(cmd):
			// A pipeline is read within ReadTimeout, too short for a blocking command:
			// take one connection for the command and its WAIT.
			conn := h.client.Conn()
			defer func() { _ = conn.Close() }()
			bctx := context.WithValue(ctx, bypass{}, true)
			if err := conn.Process(bctx, cmd); !succeeded(err) {
				return err
			}
			wait := h.waitCmd(bctx)
			_ = conn.Process(bctx, wait)
			return h.check(wait, []redis.Cmder{cmd})
		default:
			// The pipeline hook below appends the WAIT.
			_, _ = h.client.Pipelined(ctx, func(p redis.Pipeliner) error { return p.Process(ctx, cmd) })
			return cmd.Err()
		}
	}
}

// ProcessPipelineHook implements redis.Hook: a pipeline holding a write gets one WAIT at its
// end; a transaction (MULTI … EXEC) is followed by WAIT on the same connection.
func (h *waitHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	owned := !h.installed.Load()
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if ctx.Value(bypass{}) != nil || !anyWrites(cmds) {
			return next(ctx, cmds)
		}
		if isTx(cmds) {
			if !owned {
				err := redstate.Errorf(redstate.EINTERNAL, "redisconn: redis.durability does not support MULTI/EXEC on a dedicated connection (Conn, Tx)")
				for _, c := range cmds {
					c.SetErr(err)
				}
				return err
			}
			return h.tx(ctx, cmds[1:len(cmds)-1], false)
		}
		wait := h.waitCmd(ctx)
		_ = next(ctx, append(cmds[:len(cmds):len(cmds)], wait))
		_ = h.check(wait, cmds)
		return firstErr(cmds)
	}
}

// tx runs a transaction's commands in MULTI … EXEC and then WAIT on one connection, after
// ASKING when asking (a Redis Cluster node importing the transaction's slot).
func (h *waitHook) tx(ctx context.Context, inner []redis.Cmder, asking bool) error {
	conn := h.client.Conn()
	defer func() { _ = conn.Close() }()
	bctx := context.WithValue(ctx, bypass{}, true)
	if asking {
		if err := conn.Process(bctx, redis.NewStatusCmd(bctx, "asking")); err != nil {
			for _, c := range inner {
				c.SetErr(err)
			}
			return err
		}
	}
	_, err := conn.TxPipelined(bctx, func(p redis.Pipeliner) error {
		for _, c := range inner {
			_ = p.Process(bctx, c)
		}
		return nil
	})
	wait := h.waitCmd(bctx)
	_ = conn.Process(bctx, wait)
	_ = h.check(wait, inner)
	if err != nil {
		return err
	}
	return firstErr(inner)
}

// waitCmd returns WAIT replicas timeout-in-ms.
func (h *waitHook) waitCmd(ctx context.Context) *redis.IntCmd {
	return redis.NewIntCmd(ctx, "wait", h.replicas, h.timeoutMs)
}

// check turns a failed or short WAIT into an EUNAVAILABLE error wrapping ErrNotDurable on every
// write of cmds that succeeded, and returns the first error of cmds.
func (h *waitHook) check(wait *redis.IntCmd, cmds []redis.Cmder) error {
	n, err := wait.Result()
	var cause error
	switch {
	case err != nil:
		cause = fmt.Errorf("%w: WAIT %d %d failed: %w", ErrNotDurable, h.replicas, h.timeoutMs, err)
	case n < int64(h.replicas):
		cause = fmt.Errorf("%w: acknowledged by %d of %d replicas within %s", ErrNotDurable, n, h.replicas, h.timeout)
	default:
		return firstErr(cmds)
	}
	fail := redstate.Wrap(redstate.EUNAVAILABLE, cause, "written to the Redis master but not to enough replicas (the write may still be there)")
	for _, c := range cmds {
		if succeeded(c.Err()) && writes(c) {
			c.SetErr(fail)
		}
	}
	return firstErr(cmds)
}

// succeeded reports whether a command's error means it ran: none, or a nil reply (a script
// that wrote and returned nil, SET NX that did not set).
func succeeded(err error) bool { return err == nil || errors.Is(err, redis.Nil) }

// firstErr returns the first error of cmds, as go-redis reports a pipeline's.
func firstErr(cmds []redis.Cmder) error {
	for _, c := range cmds {
		if err := c.Err(); err != nil {
			return err
		}
	}
	return nil
}

// anyWrites reports whether any of cmds may change data.
func anyWrites(cmds []redis.Cmder) bool {
	for _, c := range cmds {
		if writes(c) {
			return true
		}
	}
	return false
}

// isTx reports whether cmds is a transaction as go-redis hands it to a pipeline hook.
func isTx(cmds []redis.Cmder) bool {
	return len(cmds) >= 2 && cmds[0].Name() == "multi" && cmds[len(cmds)-1].Name() == "exec"
}

// writes reports whether cmd may change data: every command but the known read-only and
// connection ones. Scripts (EVAL, EVALSHA, FCALL) count as writes.
func writes(cmd redis.Cmder) bool {
	_, ro := readOnly[cmd.Name()]
	return !ro
}

// blocking reports whether cmd is a blocking write, which may wait longer than ReadTimeout.
func blocking(cmd redis.Cmder) bool {
	switch cmd.Name() {
	case "blmove", "brpoplpush", "blpop", "brpop", "blmpop", "bzpopmin", "bzpopmax", "bzmpop", "xreadgroup":
		return true
	}
	return false
}

// readOnly lists the commands that never change data or only concern the connection.
var readOnly = func() map[string]struct{} {
	m := map[string]struct{}{}
	for _, n := range []string{
		"get", "mget", "getrange", "strlen", "substr", "lcs", "exists", "type", "ttl", "pttl",
		"expiretime", "pexpiretime", "dump", "randomkey", "keys", "scan", "dbsize", "touch",
		"hget", "hmget", "hgetall", "hexists", "hlen", "hkeys", "hvals", "hscan", "hstrlen", "hrandfield",
		"llen", "lrange", "lindex", "lpos", "scard", "smembers", "sismember", "smismember",
		"srandmember", "sscan", "sinter", "sintercard", "sunion", "sdiff",
		"zcard", "zcount", "zlexcount", "zrange", "zrangebyscore", "zrangebylex", "zrevrange",
		"zrevrangebyscore", "zrevrangebylex", "zrank", "zrevrank", "zscore", "zmscore", "zscan",
		"zrandmember", "zinter", "zunion", "zdiff", "zintercard",
		"xlen", "xrange", "xrevrange", "xread", "xpending", "xinfo",
		"getbit", "bitcount", "bitpos", "pfcount", "geopos", "geodist", "geohash", "geosearch",
		"sort_ro", "eval_ro", "evalsha_ro", "fcall_ro", "object", "memory",
		"ping", "echo", "hello", "auth", "select", "client", "info", "time", "role", "command",
		"config", "cluster", "readonly", "readwrite", "asking", "wait", "waitaof", "watch", "unwatch",
		"multi", "exec", "discard", "script", "publish", "spublish", "pubsub", "subscribe",
		"unsubscribe", "psubscribe", "punsubscribe", "ssubscribe", "sunsubscribe", "slowlog",
		"latency", "lastsave", "quit", "reset",
	} {
		m[n] = struct{}{}
	}
	return m
}()
