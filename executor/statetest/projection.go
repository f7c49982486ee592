package statetest

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/executor"
)

// NewProjectionStore returns an empty, isolated ProjectionStore whose hashes live ttl.
type NewProjectionStore func(t *testing.T, ttl time.Duration) executor.ProjectionStore

// t0 is the suite's event clock origin.
var t0 = time.Date(2025, 11, 24, 10, 0, 0, 0, time.UTC)

// taskHistory is one task's events in production order: created, started, three stages,
// paused, started again, two stages, completed; Seq numbers status events.
func taskHistory(taskID, tenantID, planID string) []executor.TaskEvent {
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	return []executor.TaskEvent{
		{Type: executor.EventTaskCreated, TaskID: taskID, TenantID: tenantID, PlanID: planID,
			StageNames: []string{"stage-0", "stage-1", "stage-2", "stage-3", "stage-4"}, Seq: 1, At: at(0)},
		{Type: executor.EventTaskStarted, TaskID: taskID, Seq: 2, At: at(1)},
		{Type: executor.EventTaskStageCompleted, TaskID: taskID, StageIndex: 0, At: at(2)},
		{Type: executor.EventTaskStageCompleted, TaskID: taskID, StageIndex: 1, At: at(3)},
		{Type: executor.EventTaskPaused, TaskID: taskID, PauseRequested: true, Seq: 3, At: at(4)},
		{Type: executor.EventTaskStarted, TaskID: taskID, Seq: 4, At: at(5)},
		{Type: executor.EventTaskStageCompleted, TaskID: taskID, StageIndex: 2, At: at(6)},
		{Type: executor.EventTaskStageCompleted, TaskID: taskID, StageIndex: 3, At: at(7)},
		{Type: executor.EventTaskStageCompleted, TaskID: taskID, StageIndex: 4, At: at(8)},
		{Type: executor.EventTaskCompleted, TaskID: taskID, Seq: 5, At: at(9)},
	}
}

// RunProjectionSuite checks the executor.ProjectionStore contract.
func RunProjectionSuite(t *testing.T, newStore NewProjectionStore, _ Features) {
	store := func(t *testing.T) executor.ProjectionStore { return newStore(t, time.Hour) }
	runAll(t, []namedTest{
		{"TaskLifecycle", func(t *testing.T) {
			s, ctx, id := store(t), t.Context(), newID("task")
			h := taskHistory(id, "tenant-001", "plan-456")
			for _, ev := range h[:4] {
				must(t, s.ApplyTaskEvent(ctx, ev), string(ev.Type))
			}
			p, err := s.GetTask(ctx, id)
			must(t, err, "GetTask")
			want := executor.TaskProjection{TaskID: id, TenantID: "tenant-001", PlanID: "plan-456", Status: executor.TaskRunning,
				StageNames: h[0].StageNames, LastCompletedStageIndex: 1, CreatedAt: t0, UpdatedAt: t0.Add(3 * time.Minute)}
			checkTask(t, p, want)
		}},
		{"TaskShuffledOrderAndRedelivery", func(t *testing.T) {
			s, ctx := store(t), t.Context()
			for round := range 8 {
				id := newID("task")
				h := taskHistory(id, "tenant-x", "plan-x")
				evs := append(slices.Clone(h), h[2], h[5], h[1]) // redeliveries
				rng := rand.New(rand.NewPCG(uint64(round), 7))
				rng.Shuffle(len(evs), func(i, j int) { evs[i], evs[j] = evs[j], evs[i] })
				for _, ev := range evs {
					must(t, s.ApplyTaskEvent(ctx, ev), string(ev.Type))
				}
				p, err := s.GetTask(ctx, id)
				must(t, err, "GetTask")
				checkTask(t, p, executor.TaskProjection{TaskID: id, TenantID: "tenant-x", PlanID: "plan-x", Status: executor.TaskCompleted,
					StageNames: h[0].StageNames, LastCompletedStageIndex: 4, CreatedAt: t0, UpdatedAt: t0.Add(9 * time.Minute)})
			}
		}},
		{"LateStageNeverLowersIndex", func(t *testing.T) {
			s, ctx, id := store(t), t.Context(), newID("task")
			for _, i := range []int{3, 1, 0, 2} {
				must(t, s.ApplyTaskEvent(ctx, executor.TaskEvent{Type: executor.EventTaskStageCompleted, TaskID: id, StageIndex: i, At: t0}), "stage")
			}
			p, _ := s.GetTask(ctx, id)
			if p.LastCompletedStageIndex != 3 {
				t.Fatalf("index %d, want 3", p.LastCompletedStageIndex)
			}
		}},
		{"TerminalNotRevivedByStaleEvent", func(t *testing.T) {
			s, ctx, id := store(t), t.Context(), newID("task")
			must(t, s.ApplyTaskEvent(ctx, executor.TaskEvent{Type: executor.EventTaskFailed, TaskID: id, Seq: 7, At: t0}), "failed")
			// Same Seq, later clock (skewed producer): terminal wins.
			must(t, s.ApplyTaskEvent(ctx, executor.TaskEvent{Type: executor.EventTaskStarted, TaskID: id, Seq: 7, At: t0.Add(time.Hour)}), "stale")
			// Unnumbered, later: still no revival.
			must(t, s.ApplyTaskEvent(ctx, executor.TaskEvent{Type: executor.EventTaskStarted, TaskID: id, At: t0.Add(time.Hour)}), "unnumbered")
			p, _ := s.GetTask(ctx, id)
			if p.Status != executor.TaskFailed {
				t.Fatalf("status %s, want FAILED", p.Status)
			}
			// A retry with a greater Seq does apply.
			must(t, s.ApplyTaskEvent(ctx, executor.TaskEvent{Type: executor.EventTaskStarted, TaskID: id, Seq: 8, At: t0.Add(time.Minute)}), "retry")
			p, _ = s.GetTask(ctx, id)
			if p.Status != executor.TaskRunning || !p.UpdatedAt.Equal(t0.Add(time.Hour)) {
				t.Fatalf("after retry: %+v", p)
			}
		}},
		{"UnnumberedEventsOrderedByTime", func(t *testing.T) {
			s, ctx, id := store(t), t.Context(), newID("task")
			must(t, s.ApplyTaskEvent(ctx, executor.TaskEvent{Type: executor.EventTaskPaused, TaskID: id, PauseRequested: true, At: t0.Add(2 * time.Second)}), "paused")
			must(t, s.ApplyTaskEvent(ctx, executor.TaskEvent{Type: executor.EventTaskStarted, TaskID: id, At: t0.Add(time.Second)}), "late started")
			p, _ := s.GetTask(ctx, id)
			if p.Status != executor.TaskPaused || !p.PauseRequested {
				t.Fatalf("got %+v, want PAUSED with pauseRequested", p)
			}
		}},
		{"PlanLifecycleShuffled", func(t *testing.T) {
			s, ctx := store(t), t.Context()
			for round := range 6 {
				id := newID("plan")
				tasks := []string{"task-123", "task-124"}
				evs := []executor.PlanEvent{
					{Type: executor.EventPlanReady, PlanID: id, TaskIDs: tasks, MaxConcurrency: 5, Seq: 1, At: t0},
					{Type: executor.EventPlanStarted, PlanID: id, Seq: 2, At: t0.Add(time.Minute)},
					{Type: executor.EventPlanPaused, PlanID: id, Progress: 0.5, Seq: 3, At: t0.Add(2 * time.Minute)},
					{Type: executor.EventPlanStarted, PlanID: id, Progress: 0.5, Seq: 4, At: t0.Add(3 * time.Minute)},
					{Type: executor.EventPlanCompleted, PlanID: id, Progress: 1, Seq: 5, At: t0.Add(4 * time.Minute)},
				}
				evs = append(evs, evs[1])
				rng := rand.New(rand.NewPCG(uint64(round), 11))
				rng.Shuffle(len(evs), func(i, j int) { evs[i], evs[j] = evs[j], evs[i] })
				for _, ev := range evs {
					must(t, s.ApplyPlanEvent(ctx, ev), string(ev.Type))
				}
				p, err := s.GetPlan(ctx, id)
				must(t, err, "GetPlan")
				if p.PlanID != id || p.Status != executor.PlanCompleted || !slices.Equal(p.TaskIDs, tasks) || p.Progress != 1 ||
					p.MaxConcurrency != 5 || !p.CreatedAt.Equal(t0) || !p.UpdatedAt.Equal(t0.Add(4*time.Minute)) {
					t.Fatalf("GetPlan = %+v", p)
				}
			}
		}},
		{"NotFoundAndInvalid", func(t *testing.T) {
			s, ctx := store(t), t.Context()
			_, err := s.GetTask(ctx, newID("task"))
			wantCode(t, err, redstate.ENOTFOUND, "GetTask missing")
			_, err = s.GetPlan(ctx, newID("plan"))
			wantCode(t, err, redstate.ENOTFOUND, "GetPlan missing")
			for _, bad := range badIDs {
				wantCode(t, s.ApplyTaskEvent(ctx, executor.TaskEvent{Type: executor.EventTaskStarted, TaskID: bad, At: t0}), redstate.EINVALID, "task "+bad)
				wantCode(t, s.ApplyPlanEvent(ctx, executor.PlanEvent{Type: executor.EventPlanStarted, PlanID: bad, At: t0}), redstate.EINVALID, "plan "+bad)
				_, err = s.GetTask(ctx, bad)
				wantCode(t, err, redstate.EINVALID, "GetTask "+bad)
			}
			wantCode(t, s.ApplyTaskEvent(ctx, executor.TaskEvent{Type: "Bogus", TaskID: "t", At: t0}), redstate.EINVALID, "bad type")
			wantCode(t, s.ApplyTaskEvent(ctx, executor.TaskEvent{Type: executor.EventTaskStarted, TaskID: "t"}), redstate.EINVALID, "no time")
			wantCode(t, s.ApplyTaskEvent(ctx, executor.TaskEvent{Type: executor.EventTaskCreated, TaskID: "t", TenantID: "a b", At: t0}), redstate.EINVALID, "bad tenant")
		}},
		{"TTL", func(t *testing.T) {
			s, ctx := newStore(t, shortTTL), t.Context()
			task, plan := newID("task"), newID("plan")
			must(t, s.ApplyTaskEvent(ctx, executor.TaskEvent{Type: executor.EventTaskStarted, TaskID: task, At: t0}), "task")
			must(t, s.ApplyPlanEvent(ctx, executor.PlanEvent{Type: executor.EventPlanStarted, PlanID: plan, At: t0}), "plan")
			eventually(t, "projection expiry", func() bool {
				_, e1 := s.GetTask(ctx, task)
				_, e2 := s.GetPlan(ctx, plan)
				return redstate.IsCode(e1, redstate.ENOTFOUND) && redstate.IsCode(e2, redstate.ENOTFOUND)
			})
		}},
	})
}

func checkTask(t *testing.T, got, want executor.TaskProjection) {
	t.Helper()
	if got.TaskID != want.TaskID || got.TenantID != want.TenantID || got.PlanID != want.PlanID || got.Status != want.Status ||
		got.PauseRequested != want.PauseRequested || !slices.Equal(got.StageNames, want.StageNames) ||
		got.LastCompletedStageIndex != want.LastCompletedStageIndex || !got.CreatedAt.Equal(want.CreatedAt) || !got.UpdatedAt.Equal(want.UpdatedAt) {
		t.Fatalf("task projection\n got %+v\nwant %+v", got, want)
	}
}
