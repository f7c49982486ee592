// Package redisscript runs one Lua script many times in one pipeline, the way every Redis
// backend of redstate batches its atomic steps.
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
		if err := cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
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
