package cli

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate/config"
	"github.com/redstate/redstate/executor"
	"github.com/redstate/redstate/redistest"
)

// startExecutorInstance runs an executor instance on srv as serve would (same stores), with
// handler "h": stage "fail" fails once, stage "block" waits for release.
func startExecutorInstance(t *testing.T, srv *redistest.Server, release <-chan struct{}) *executor.Runner {
	t.Helper()
	cfg := config.Default()
	cfg.Redis.URL = srv.URL
	client := srv.Client(t)
	stores, _, err := redisExecutorStores(client, cfg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := executor.New(executor.Options{Stores: stores, DefaultRetry: executor.RetryPolicy{MaxAttempts: 1},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	failed := false
	r.Handle("h", func(ctx context.Context, req executor.StageRequest) (map[string]string, error) {
		switch req.Stage {
		case "fail":
			if !failed {
				failed = true
				return nil, errors.New("boom\x1b[31m")
			}
		case "block":
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return nil, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = r.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return r
}

// waitStatus waits until the CLI shows task id in status want.
func waitStatus(t *testing.T, url, id string, want executor.TaskStatus) executor.TaskStatusInfo {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := run(t, "executor", "tasks", "--json", "--redis", url)
		if err != nil {
			t.Fatalf("executor tasks --json: %v", err)
		}
		var tasks []executor.TaskStatusInfo
		if err := json.Unmarshal([]byte(out), &tasks); err != nil {
			t.Fatalf("executor tasks --json is not a JSON array: %v\n%s", err, out)
		}
		for _, ti := range tasks {
			if ti.TaskID == id && ti.Status == want {
				return ti
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s never became %s:\n%s", id, want, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestExecutorCommands: listings (tables and --json), and pause / resume / retry / cancel of
// tasks run by another process's executor instance.
func TestExecutorCommands(t *testing.T) {
	srv := redistest.StartStandalone(t)
	release := make(chan struct{})
	r := startExecutorInstance(t, srv, release)
	ctx := t.Context()
	def := executor.PlanDef{PlanID: "p1", MaxConcurrency: 3, Tasks: []executor.TaskDef{
		{TaskID: "t-fail", TenantID: "acme", Stages: []string{"ok", "fail", "last"}, Handler: "h"},
		{TaskID: "t-block", TenantID: "beta", Stages: []string{"block", "after"}, Handler: "h"},
	}}
	if _, err := r.CreatePlan(ctx, def, true); err != nil {
		t.Fatal(err)
	}
	if _, err := r.CreatePlan(ctx, executor.PlanDef{PlanID: "p2", MaxConcurrency: 1, Tasks: []executor.TaskDef{
		{TaskID: "t-idle", TenantID: "gamma", Stages: []string{"x"}, Handler: "h"}}}, false); err != nil {
		t.Fatal(err)
	}
	failed := waitStatus(t, srv.URL, "t-fail", executor.TaskFailed)
	if failed.CompletedStages != 1 || failed.Checkpoint != executor.CheckpointPresent {
		t.Fatalf("failed task = %+v", failed)
	}
	waitStatus(t, srv.URL, "t-block", executor.TaskRunning)

	out, err := run(t, "executor", "tasks", "--redis", srv.URL)
	if err != nil || !strings.Contains(out, "TASK ") || !strings.Contains(out, "1/3") || !strings.Contains(out, `boom\x1b[31m`) {
		t.Fatalf("executor tasks (table, reason escaped): %v\n%s", err, out)
	}
	if out, err = run(t, "executor", "plans", "--redis", srv.URL); err != nil || !strings.Contains(out, "p1") || !strings.Contains(out, "p2") {
		t.Fatalf("executor plans: %v\n%s", err, out)
	}
	out, err = run(t, "executor", "locks", "--json", "--redis", srv.URL)
	var locks []executor.LockInfo
	if err != nil || json.Unmarshal([]byte(out), &locks) != nil || len(locks) != 1 || locks[0].TenantID != "beta" ||
		locks[0].Holder != "t-block" || locks[0].Fence == 0 || locks[0].TimeLeftMs <= 0 {
		t.Fatalf("executor locks --json: %v\n%s", err, out)
	}
	if out, err = run(t, "executor", "checkpoints", "--redis", srv.URL); err != nil || !strings.Contains(out, "t-fail") {
		t.Fatalf("executor checkpoints: %v\n%s", err, out)
	}

	// pause a running task: routed to its instance, pauses at the stage boundary
	if out, err = run(t, "executor", "pause", "t-block", "--redis", srv.URL); err != nil || !strings.Contains(out, "pause requested") {
		t.Fatalf("executor pause: %v\n%s", err, out)
	}
	close(release)
	waitStatus(t, srv.URL, "t-block", executor.TaskPaused)
	if out, err = run(t, "executor", "resume", "t-block", "--redis", srv.URL); err != nil || !strings.Contains(out, "sent to instance") {
		t.Fatalf("executor resume: %v\n%s", err, out)
	}
	waitStatus(t, srv.URL, "t-block", executor.TaskCompleted)

	if out, err = run(t, "executor", "retry", "t-fail", "--redis", srv.URL); err != nil {
		t.Fatalf("executor retry: %v\n%s", err, out)
	}
	if done := waitStatus(t, srv.URL, "t-fail", executor.TaskCompleted); done.CompletedStages != 3 {
		t.Fatalf("retried task = %+v", done)
	}

	if _, err = run(t, "executor", "cancel", "t-idle", "--redis", srv.URL); err == nil || !strings.Contains(err.Error(), "not confirmed") || !strings.Contains(err.Error(), "--yes") {
		t.Fatalf("executor cancel without --yes = %v", err)
	}
	waitStatus(t, srv.URL, "t-idle", executor.TaskCreated)
	if out, err = run(t, "executor", "cancel", "t-idle", "--yes", "--redis", srv.URL); err != nil || !strings.Contains(out, "CANCELLED") {
		t.Fatalf("executor cancel --yes: %v\n%s", err, out)
	}
	if _, err = run(t, "executor", "pause", "no-such-task", "--redis", srv.URL); err == nil {
		t.Fatal("executor pause of an unknown task succeeded")
	}
}
