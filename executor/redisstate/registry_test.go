package redisstate_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/executor"
	"github.com/redstate/redstate/executor/redisstate"
	"github.com/redstate/redstate/executor/statetest"
	"github.com/redstate/redstate/redistest"
)

func TestRegistry_Conformance(t *testing.T) {
	redistest.RunOnTopologies(t, func(t *testing.T, client redis.UniversalClient) {
		statetest.RunRegistrySuite(t, func(t *testing.T, ttl time.Duration) executor.TaskRegistry {
			return must(redisstate.NewRegistry(client, opts(ttl)))(t)
		}, statetest.Features{})
	})
}

// The registry's keys as docs/executor.md lists them: the spec a JSON String at N:spec:<taskId>
// with the projection TTL, the running set a Set at N:running without TTL.
func TestRegistry_KeyLayout(t *testing.T) {
	redistest.RunOnTopologies(t, func(t *testing.T, client redis.UniversalClient) {
		ctx := t.Context()
		r := must(redisstate.NewRegistry(client, redisstate.Options{}))(t)
		spec := executor.TaskSpec{TaskID: "task-123", TenantID: "tenant-001", PlanID: "plan-456",
			Stages: []string{"stage-0"}, Handler: "h", Retry: executor.RetryPolicy{MaxAttempts: 3}}
		if err := r.PutSpec(ctx, spec); err != nil {
			t.Fatal(err)
		}
		raw, err := client.Get(ctx, "executor:spec:task-123").Bytes()
		if err != nil {
			t.Fatal(err)
		}
		if got, err := executor.DecodeSpec(raw); err != nil || got.TenantID != "tenant-001" || got.PlanID != "plan-456" {
			t.Fatalf("stored spec %s: %+v %v", raw, got, err)
		}
		checkTTL(t, client, "executor:spec:task-123", executor.DefaultProjectionTTL)
		for _, id := range []string{"task-123", "task-124"} {
			if err := r.MarkRunning(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
		if typ := client.Type(ctx, "executor:running").Val(); typ != "set" {
			t.Fatalf("executor:running is a %q, want a set", typ)
		}
		if got := client.SMembers(ctx, "executor:running").Val(); len(got) != 2 {
			t.Fatalf("running set members %q", got)
		}
		checkTTL(t, client, "executor:running", executor.DefaultProjectionTTL) // bounded: 30 d after the last start
	})
}
