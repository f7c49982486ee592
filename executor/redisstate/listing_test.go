package redisstate_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/executor"
	"github.com/redstate/redstate/executor/redisstate"
	"github.com/redstate/redstate/redistest"
)

// TestLister: plans, tasks, locks (holder, fence, time left), checkpoints (a corrupt one
// listed with its error) and live instances, on every topology; claim keys, whose names
// contain "plan:" and "task:" too, are not listed.
func TestLister(t *testing.T) {
	redistest.RunOnTopologies(t, func(t *testing.T, client redis.UniversalClient) {
		ctx := t.Context()
		o := opts(0)
		proj := must(redisstate.NewProjections(client, o))(t)
		locks := must(redisstate.NewLocks(client, o))(t)
		cks := must(redisstate.NewCheckpoints(client, o))(t)
		reg := must(redisstate.NewRegistry(client, o))(t)
		l := must(redisstate.NewLister(client, o))(t)
		now := time.Now().UTC()
		for _, id := range []string{"t:2", "t1"} {
			if err := proj.ApplyTaskEvent(ctx, executor.TaskEvent{Type: executor.EventTaskCreated, TaskID: id, TenantID: "acme", PlanID: "p1", StageNames: []string{"a", "b"}, At: now}); err != nil {
				t.Fatal(err)
			}
		}
		if err := proj.ApplyPlanEvent(ctx, executor.PlanEvent{Type: executor.EventPlanReady, PlanID: "p1", TaskIDs: []string{"t1", "t:2"}, MaxConcurrency: 1, At: now}); err != nil {
			t.Fatal(err)
		}
		if err := reg.ClaimIDs(ctx, "p9", []string{"t9"}); err != nil {
			t.Fatal(err)
		}
		lease, ok, err := locks.TryAcquire(ctx, "acme", "t1", time.Minute)
		if err != nil || !ok {
			t.Fatalf("acquire: %v %v", ok, err)
		}
		if _, err := cks.Put(ctx, "t1", executor.Checkpoint{LastCompletedStageIndex: 0, CompletedStages: []string{"a"}, ContextData: map[string]string{"k": "v"}}, 0); err != nil {
			t.Fatal(err)
		}
		if err := client.Set(ctx, o.Keys.Checkpoint("t:2"), "not json", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		if err := reg.Heartbeat(ctx, "node-1", time.Minute); err != nil {
			t.Fatal(err)
		}

		plans := must(l.Plans(ctx))(t)
		if len(plans) != 1 || plans[0].PlanID != "p1" || len(plans[0].TaskIDs) != 2 {
			t.Errorf("plans = %+v", plans)
		}
		if ids := must(l.TaskIDs(ctx))(t); len(ids) != 2 || ids[0] != "t1" || ids[1] != "t:2" {
			t.Errorf("task ids = %v, want [t1 t:2]", ids)
		}
		ls := must(l.Locks(ctx))(t)
		if len(ls) != 1 || ls[0].TenantID != "acme" || ls[0].Holder != "t1" || ls[0].Fence != lease.Fence ||
			ls[0].TimeLeftMs <= 0 || ls[0].TimeLeftMs > time.Minute.Milliseconds() {
			t.Errorf("locks = %+v, want acme held by t1 with fence %d", ls, lease.Fence)
		}
		cs := must(l.Checkpoints(ctx))(t)
		if len(cs) != 2 || cs[0].TaskID != "t1" || cs[0].Version == 0 || cs[0].ContextKeys != 1 || cs[0].Error != "" ||
			cs[1].TaskID != "t:2" || cs[1].Error == "" {
			t.Errorf("checkpoints = %+v", cs)
		}
		if in := must(l.Instances(ctx))(t); len(in) != 1 || in[0] != "node-1" {
			t.Errorf("instances = %v", in)
		}
	})
}
