package redisscript_test

import (
	"context"
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/internal/redisscript"
	"github.com/redstate/redstate/redistest"
)

var echoScript = redis.NewScript(`return ARGV[1]`)

// An EVALSHA sent in a caller's pipeline to a server without the script meets NOSCRIPT;
// EvalOnNoScript sends it again by EVAL and returns that reply, and leaves any other reply as
// it is.
func TestEvalOnNoScript(t *testing.T) {
	ctx := context.Background()
	c := redistest.StartStandalone(t).Client(t)
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	var cmd *redis.Cmd
	_, _ = c.Pipelined(ctx, func(p redis.Pipeliner) error {
		cmd = echoScript.EvalSha(ctx, p, nil, "a")
		return nil
	})
	if !redisscript.NoScript(cmd.Err()) {
		t.Fatalf("EVALSHA of an unloaded script: %v, want NOSCRIPT", cmd.Err())
	}
	got := redisscript.EvalOnNoScript(ctx, c, echoScript, cmd, nil, "a")
	if v, err := got.Text(); err != nil || v != "a" {
		t.Fatalf("EvalOnNoScript = %q, %v; want \"a\"", v, err)
	}

	// The EVAL loaded the script: the next EVALSHA answers, and its reply is kept.
	_, _ = c.Pipelined(ctx, func(p redis.Pipeliner) error {
		cmd = echoScript.EvalSha(ctx, p, nil, "b")
		return nil
	})
	if got := redisscript.EvalOnNoScript(ctx, c, echoScript, cmd, nil, "x"); got != cmd {
		t.Fatalf("EvalOnNoScript replaced a reply that did not meet NOSCRIPT: %v", got)
	}
	if v, err := cmd.Text(); err != nil || v != "b" {
		t.Fatalf("EVALSHA after the load = %q, %v; want \"b\"", v, err)
	}
}

func TestNoScript(t *testing.T) {
	if redisscript.NoScript(nil) || redisscript.NoScript(errors.New("NOSCRIPT but not a reply")) {
		t.Error("NoScript is true for an error that is not a Redis reply")
	}
}
