// Package redisscript runs one Lua script many times in one pipeline, the way every Redis
// backend of redstate batches its atomic steps, and holds the one NOSCRIPT fallback: a script
// sent by EVALSHA to a server that does not have it (restarted, failed over, its script cache
// flushed) is sent again by EVAL, which also loads it.
package redisscript

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// Call is one script invocation of RunPipelined.
type Call struct {
	// Keys are the script's KEYS.
	Keys []string
	// Args are its ARGV.
	Args []any
}

// RunPipelined runs script once per call in one pipeline (one round trip per node; go-redis
// splits a Cluster pipeline per node and sends the parts in parallel), by EVALSHA, re-sending
// by EVAL only the calls that met NOSCRIPT (a server restarted or its script cache flushed).
// Each returned command carries its own result and error.
func RunPipelined(ctx context.Context, c redis.UniversalClient, script *redis.Script, calls []Call) []*redis.Cmd {
	if len(calls) == 1 {
		return []*redis.Cmd{script.Run(ctx, c, calls[0].Keys, calls[0].Args...)}
	}
	cmds := make([]*redis.Cmd, len(calls))
	pipe := c.Pipeline()
	for i, call := range calls {
		cmds[i] = script.EvalSha(ctx, pipe, call.Keys, call.Args...)
	}
	_, _ = pipe.Exec(ctx)
	var retry []int
	for i, cmd := range cmds {
		if NoScript(cmd.Err()) {
			retry = append(retry, i)
		}
	}
	if len(retry) > 0 {
		pipe = c.Pipeline()
		for _, i := range retry {
			cmds[i] = script.Eval(ctx, pipe, calls[i].Keys, calls[i].Args...)
		}
		_, _ = pipe.Exec(ctx)
	}
	return cmds
}

// NoScript reports whether err is Redis's NOSCRIPT reply: the server does not have the script
// an EVALSHA named.
func NoScript(err error) bool { return err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") }

// EvalOnNoScript returns cmd, the reply of script sent by EVALSHA inside a pipeline or
// transaction the caller built, or when cmd met NOSCRIPT, the reply of script sent again by
// EVAL on c (one more round trip, which also loads the script). Outside such a batch,
// script.Run does the same.
func EvalOnNoScript(ctx context.Context, c redis.Scripter, script *redis.Script, cmd *redis.Cmd, keys []string, args ...any) *redis.Cmd {
	if !NoScript(cmd.Err()) {
		return cmd
	}
	return script.Eval(ctx, c, keys, args...)
}
