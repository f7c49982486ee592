package redisstate_test

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/executor"
	"github.com/redstate/redstate/executor/redisstate"
	"github.com/redstate/redstate/internal/keyspace"
	"github.com/redstate/redstate/redistest"
)

func TestSeedKeyLayoutFormatsAndDefaultTTLs(t *testing.T) {
	redistest.RunOnTopologies(t, func(t *testing.T, client redis.UniversalClient) {
		ctx := t.Context()
		// No options: the seed's namespace and TTLs exactly.
		cps := must(redisstate.NewCheckpoints(client, redisstate.Options{}))(t)
		prj := must(redisstate.NewProjections(client, redisstate.Options{}))(t)
		idx := must(redisstate.NewTenantIndex(client, redisstate.Options{}))(t)
		locks := must(redisstate.NewLocks(client, redisstate.Options{}))(t)

		saved := time.Date(2025, 11, 24, 10, 30, 0, 0, time.UTC)
		v := must(cps.Put(ctx, "task-123", executor.Checkpoint{LastCompletedStageIndex: 2,
			CompletedStages: []string{"stage-0", "stage-1", "stage-2"},
			ContextData:     map[string]string{"customKey": "customValue"}, SavedAt: saved}, 0))(t)
		raw := client.Get(ctx, "executor:ckpt:task-123").Val()
		want := executor.VersionPrefix(v) + `"lastCompletedStageIndex":2,"completedStages":["stage-0","stage-1","stage-2"],"contextData":{"customKey":"customValue"},"savedAt":"2025-11-24T10:30:00"}`
		if raw != want {
			t.Fatalf("stored checkpoint\n got %s\nwant %s", raw, want)
		}
		checkTTL(t, client, "executor:ckpt:task-123", executor.DefaultCheckpointTTL)

		must(0, prj.ApplyTaskEvent(ctx, executor.TaskEvent{Type: executor.EventTaskCreated, TaskID: "task-123", TenantID: "tenant-001",
			PlanID: "plan-456", StageNames: []string{"stage-0", "stage-1", "stage-2"}, Seq: 1, At: saved}))(t)
		h := client.HGetAll(ctx, "executor:task:task-123").Val()
		for f, v := range map[string]string{"taskId": "task-123", "tenantId": "tenant-001", "planId": "plan-456", "status": "CREATED",
			"pauseRequested": "false", "stageNames": `["stage-0","stage-1","stage-2"]`, "lastCompletedStageIndex": "-1",
			"createdAt": "2025-11-24T10:30:00", "updatedAt": "2025-11-24T10:30:00"} {
			if h[f] != v {
				t.Errorf("task hash field %s = %q, want %q", f, h[f], v)
			}
		}
		checkTTL(t, client, "executor:task:task-123", executor.DefaultProjectionTTL)
		must(0, prj.ApplyPlanEvent(ctx, executor.PlanEvent{Type: executor.EventPlanReady, PlanID: "plan-456",
			TaskIDs: []string{"task-123", "task-124"}, MaxConcurrency: 5, Progress: 0.5, At: saved}))(t)
		if got := client.HGet(ctx, "executor:plan:plan-456", "taskIds").Val(); got != `["task-123","task-124"]` {
			t.Errorf("plan taskIds = %q", got)
		}
		checkTTL(t, client, "executor:plan:plan-456", executor.DefaultProjectionTTL)

		must(0, idx.Set(ctx, "tenant-001", "task-123"))(t)
		if got := client.Get(ctx, "executor:index:tenant:tenant-001").Val(); got != "task-123" {
			t.Errorf("index = %q", got)
		}
		checkTTL(t, client, "executor:index:tenant:tenant-001", executor.DefaultProjectionTTL)

		lease, ok, err := locks.TryAcquire(ctx, "tenant-001", "task-123", executor.DefaultLockTTL)
		if err != nil || !ok {
			t.Fatalf("acquire: %v %v", ok, err)
		}
		if got := client.Get(ctx, "executor:lock:tenant:tenant-001").Val(); got != lease.Token || !strings.HasPrefix(got, "task-123#") {
			t.Errorf("lock value %q, token %q", got, lease.Token)
		}
		checkTTL(t, client, "executor:lock:tenant:tenant-001", executor.DefaultLockTTL)
		fence := executor.MustKeys(redstate.KeyPrefix{}).TenantFence("tenant-001")
		if keyspace.Slot(fence) != keyspace.Slot("executor:lock:tenant:tenant-001") {
			t.Fatalf("fence key %s not in the lock's slot", fence)
		}
		if got := client.Get(ctx, fence).Val(); got == "" {
			t.Errorf("fence key %s is empty", fence)
		}
		checkTTL(t, client, fence, executor.FenceTTL(executor.DefaultLockTTL)) // bounded: 30 d after the last lock
	})
}

func checkTTL(t *testing.T, client redis.UniversalClient, key string, want time.Duration) {
	t.Helper()
	got := client.PTTL(t.Context(), key).Val()
	if got > want || got < want-time.Minute {
		t.Errorf("TTL of %s = %v, want ~%v", key, got, want)
	}
}

func TestCheckpointCacheNeverStaleAcrossInstances(t *testing.T) {
	redistest.RunOnTopologies(t, func(t *testing.T, client redis.UniversalClient) {
		ctx := t.Context()
		o := opts(time.Hour)
		a := must(redisstate.NewCheckpoints(client, o))(t)
		b := must(redisstate.NewCheckpoints(client, o))(t)
		v := must(a.Put(ctx, "task-1", executor.Checkpoint{LastCompletedStageIndex: 0}, 0))(t)
		must(a.Get(ctx, "task-1"))(t) // cached in a
		v2 := must(b.Put(ctx, "task-1", executor.Checkpoint{LastCompletedStageIndex: 1}, v))(t)
		if got := must(a.Get(ctx, "task-1"))(t); got.Version != v2 || got.LastCompletedStageIndex != 1 {
			t.Fatalf("a served %+v after b wrote version %d", got, v2)
		}
		// Removed and recreated elsewhere at a lower index: a must see the new one.
		must(0, b.Remove(ctx, "task-1"))(t)
		v3 := must(b.Put(ctx, "task-1", executor.Checkpoint{LastCompletedStageIndex: 0}, 0))(t)
		if got := must(a.Get(ctx, "task-1"))(t); got.Version != v3 || got.LastCompletedStageIndex != 0 {
			t.Fatalf("a served %+v after b recreated version %d", got, v3)
		}
		must(0, b.Remove(ctx, "task-1"))(t)
		if _, err := a.Get(ctx, "task-1"); err == nil {
			t.Fatal("a served a removed checkpoint")
		}
	})
}

func TestFenceSurvivesCounterLoss(t *testing.T) {
	redistest.RunOnTopologies(t, func(t *testing.T, client redis.UniversalClient) {
		ctx := t.Context()
		o := opts(0)
		l := must(redisstate.NewLocks(client, o))(t)
		a, _, err := l.TryAcquire(ctx, "tenant-1", "task-a", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		must(0, l.Release(ctx, "tenant-1", a.Token))(t)
		client.Del(ctx, o.Keys.TenantFence("tenant-1")) // as after a restart without persistence
		b, _, err := l.TryAcquire(ctx, "tenant-1", "task-b", time.Minute)
		if err != nil || b.Fence <= a.Fence {
			t.Fatalf("fence after counter loss %d (err %v), before %d", b.Fence, err, a.Fence)
		}
	})
}
