//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/executor"
	"github.com/redstate/redstate/executor/redisstate"
)

// Stage run load: one submitter creates and starts a plan of one task (stageCount stages, a
// tenant of runTenants) every runSubmitPause; the runner, one instance on the Redis state for
// the whole run, runs the stages (each stageWork long) under the tenant lock, checkpointing
// after each. settle waits up to runDrain for every submitted task to complete, retrying
// failed ones from their checkpoint (the documented repair) on the way.
const (
	runTenants     = 8
	stageCount     = 3
	stageWork      = 20 * time.Millisecond
	runSubmitPause = 50 * time.Millisecond
	runDrain       = 60 * time.Second
	runHandler     = "chaos"
)

// stageRuns is the runner of a run and the phases whose tasks it runs.
type stageRuns struct {
	runner *executor.Runner

	mu sync.Mutex
	// phaseOf maps each submitted task to its phase.
	phaseOf map[string]*stagePhase
}

// newStageRuns starts a runner on the Redis state under o on r.rdb, stopped in t.Cleanup.
func newStageRuns(t *testing.T, r *run, o redisstate.Options) *stageRuns {
	t.Helper()
	ck, err1 := redisstate.NewCheckpoints(r.rdb, o)
	pr, err2 := redisstate.NewProjections(r.rdb, o)
	ix, err3 := redisstate.NewTenantIndex(r.rdb, o)
	lk, err4 := redisstate.NewLocks(r.rdb, o)
	rg, err5 := redisstate.NewRegistry(r.rdb, o)
	for _, err := range []error{err1, err2, err3, err4, err5} {
		if err != nil {
			t.Fatalf("executor Redis stores: %v", err)
		}
	}
	runner, err := executor.New(executor.Options{
		Stores:            executor.Stores{Checkpoints: ck, Projections: pr, Index: ix, Locks: lk, Registry: rg},
		LockTTL:           3 * time.Second,
		HeartbeatInterval: time.Second, LockRetryInterval: 50 * time.Millisecond, ShutdownTimeout: 5 * time.Second,
		// A run cut short by a failover may leave its task RUNNING (its FAILED outcome could not
		// be published); the orphan scan marks it FAILED once its tenant lock is free. Scan
		// every second (default 10 s) so that the phase settles within runDrain.
		OrphanScanInterval: time.Second,
		DefaultRetry:       executor.RetryPolicy{MaxAttempts: 3, Backoff: 500 * time.Millisecond, MaxBackoff: 2 * time.Second},
		Logger:             slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatalf("executor.New: %v", err)
	}
	s := &stageRuns{runner: runner, phaseOf: map[string]*stagePhase{}}
	runner.Handle(runHandler, s.stage)
	runner.OnEvent(func(ev executor.Event) {
		if ev.Type == string(executor.EventTaskCompleted) {
			if p := s.phase(ev.TaskID); p != nil {
				p.complete(ev.TaskID)
			}
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = runner.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return s
}

// phase returns the phase of a submitted task (nil for a task of no phase).
func (s *stageRuns) phase(taskID string) *stagePhase {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.phaseOf[taskID]
}

// stage is the stage handler: it records the run with the task's phase and works stageWork.
func (s *stageRuns) stage(_ context.Context, req executor.StageRequest) (map[string]string, error) {
	p := s.phase(req.TaskID)
	if p == nil {
		return nil, fmt.Errorf("task %s of no phase", req.TaskID)
	}
	p.enter(req.TaskID, req.Stage)
	time.Sleep(stageWork)
	p.leave(req.TaskID)
	out := req.ContextData
	out[req.Stage] = "done"
	return out, nil
}

// newPhase returns the stage run load of one phase.
func (s *stageRuns) newPhase(r *run, keys executor.Keys, phase int) *stagePhase {
	return &stagePhase{
		runs: s, phase: phase,
		tenants:   faultedIDs(r, fmt.Sprintf("run-p%d", phase), runTenants, keys.TenantLock),
		submitted: map[string]bool{}, completed: map[string]bool{},
		stageRuns: map[string]int{}, running: map[string]int{},
	}
}

// stagePhase is the stage run load of one phase: the tasks whose submission was acknowledged,
// those that completed, how often each stage ran, and overlapping runs of one task.
type stagePhase struct {
	runs    *stageRuns
	phase   int
	tenants []string
	log     opLog

	mu         sync.Mutex
	submitted  map[string]bool
	completed  map[string]bool
	stageRuns  map[string]int
	running    map[string]int
	concurrent int
	// vanished counts acknowledged tasks with no projection after the drain (their
	// submission was lost); stuck counts tasks still present but not completed.
	vanished, stuck int
}

// start runs the submitter until ctx ends.
func (p *stagePhase) start(ctx context.Context, wg *sync.WaitGroup) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			p.submit(ctx, i)
			time.Sleep(runSubmitPause)
		}
	}()
}

// submit creates and starts a plan of task i.
func (p *stagePhase) submit(ctx context.Context, i int) {
	id := fmt.Sprintf("run-p%d-task-%d", p.phase, i)
	p.runs.mu.Lock()
	p.runs.phaseOf[id] = p
	p.runs.mu.Unlock()
	var stages []string
	for s := range stageCount {
		stages = append(stages, fmt.Sprintf("s%d", s))
	}
	def := executor.PlanDef{PlanID: fmt.Sprintf("run-p%d-plan-%d", p.phase, i), MaxConcurrency: 1, Tasks: []executor.TaskDef{
		{TaskID: id, TenantID: p.tenants[i%len(p.tenants)], Stages: stages, Handler: runHandler},
	}}
	opCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
	_, err := p.runs.runner.CreatePlan(opCtx, def, true)
	cancel()
	if ctx.Err() != nil {
		return // outcome unknown
	}
	p.log.add(err)
	if err == nil {
		p.mu.Lock()
		p.submitted[id] = true
		p.mu.Unlock()
	}
}

// enter records the start of a stage run of task.
func (p *stagePhase) enter(task, stage string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stageRuns[task+"/"+stage]++
	p.running[task]++
	if p.running[task] > 1 {
		p.concurrent++
	}
}

// leave records the end of a stage run of task.
func (p *stagePhase) leave(task string) {
	p.mu.Lock()
	p.running[task]--
	p.mu.Unlock()
}

// complete records that task completed.
func (p *stagePhase) complete(task string) {
	p.mu.Lock()
	p.completed[task] = true
	p.mu.Unlock()
}

// unfinished returns the acknowledged tasks that have not completed.
func (p *stagePhase) unfinished() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var ids []string
	for id := range p.submitted {
		if !p.completed[id] {
			ids = append(ids, id)
		}
	}
	return ids
}

// settle waits up to runDrain for the acknowledged tasks to complete: a task the projection
// shows COMPLETED counts (its completion event's hook may have been missed by a failed
// publish), and a FAILED one is retried from its checkpoint.
func (p *stagePhase) settle(t *testing.T) {
	deadline := time.Now().Add(runDrain)
	for time.Now().Before(deadline) {
		ids := p.unfinished()
		if len(ids) == 0 {
			return
		}
		for _, id := range ids {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			st, err := p.runs.runner.TaskStatus(ctx, id)
			switch {
			case err != nil:
			case st.Status == executor.TaskCompleted:
				p.complete(id)
			case st.Status == executor.TaskFailed:
				if err := p.runs.runner.Retry(ctx, id, true); err == nil {
					t.Logf("executor stage run: retried failed task %s from its checkpoint", id)
				}
			}
			cancel()
		}
		time.Sleep(500 * time.Millisecond)
	}
	for _, id := range p.unfinished() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		st, err := p.runs.runner.TaskStatus(ctx, id)
		cancel()
		t.Logf("executor stage run: task %s did not complete within %v: %s, %d stages done, %v", id, runDrain, st.Status, st.CompletedStages, err)
		p.mu.Lock()
		if redstate.IsCode(err, redstate.ENOTFOUND) {
			p.vanished++
		} else {
			p.stuck++
		}
		p.mu.Unlock()
	}
}

// row reports the stage runs: acknowledged tasks that never completed (lost), stages that
// ran more than once (dups) and overlapping runs of one task (concurrent).
func (p *stagePhase) row(t *testing.T, faultAt time.Time) row {
	r := newRow("executor stage run")
	r.acked, r.failed = p.log.counts()
	p.mu.Lock()
	r.lost, r.stuck = p.vanished, p.stuck
	r.dups, r.concurrent = 0, p.concurrent
	for _, n := range p.stageRuns {
		if n > 1 {
			r.dups++
		}
	}
	p.mu.Unlock()
	r.recovery = recovered(t, &p.log, faultAt, r.block)
	return r
}
