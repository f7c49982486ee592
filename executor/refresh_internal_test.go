package executor

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
)

// racyProjections is a ProjectionStore for one plan with one task whose first GetTask returns
// the task's state and then waits until release is closed, so a second refresh can overtake it.
type racyProjections struct {
	mu      sync.Mutex
	task    TaskStatus
	plan    PlanProjection
	order   string
	calls   int
	reading chan struct{} // closed once the first GetTask has read
	release chan struct{} // the first GetTask returns once this is closed
}

func (p *racyProjections) ApplyTaskEvent(context.Context, TaskEvent) error { return nil }

func (p *racyProjections) ApplyPlanEvent(_ context.Context, ev PlanEvent) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if order := EventOrder(ev.Seq, ev.Type.Status().Terminal(), ev.At); order > p.order {
		p.order, p.plan.Status = order, ev.Type.Status()
	}
	return nil
}

func (p *racyProjections) GetTask(_ context.Context, id string) (TaskProjection, error) {
	p.mu.Lock()
	p.calls++
	first, status := p.calls == 1, p.task
	p.mu.Unlock()
	if first {
		close(p.reading)
		<-p.release
	}
	return TaskProjection{TaskID: id, Status: status}, nil
}

func (p *racyProjections) GetPlan(context.Context, string) (PlanProjection, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return PlanProjection{PlanID: "plan-1", TaskIDs: []string{"task-1"}}, nil
}

// TestRefreshPlan_LaterReadWins: a refresh that read the task FAILED (before its retry) and is
// published after a refresh that read it COMPLETED must not leave the plan FAILED. The e2e
// restart test failed this way now and then (plan FAILED, progress 0, task COMPLETED).
func TestRefreshPlan_LaterReadWins(t *testing.T) {
	p := &racyProjections{task: TaskFailed, reading: make(chan struct{}), release: make(chan struct{})}
	r := &Runner{st: Stores{Projections: p}, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	done := make(chan struct{})
	go func() { defer close(done); r.refreshPlan(context.Background(), "plan-1") }() // reads FAILED, then waits
	<-p.reading
	p.mu.Lock()
	p.task = TaskCompleted // the retry finished
	p.mu.Unlock()
	r.refreshPlan(context.Background(), "plan-1") // reads COMPLETED and publishes first
	close(p.release)
	<-done
	if p.plan.Status != PlanCompleted {
		t.Fatalf("plan = %s after the later read saw the task COMPLETED, want COMPLETED", p.plan.Status)
	}
}
