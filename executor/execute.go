package executor

import (
	"context"
	"fmt"
	"time"

	"github.com/redstate/redstate"
)

// stageRun is one locked run of a task's remaining stages: what execute's steps share.
type stageRun struct {
	r     *Runner
	t     *taskRun
	h     StageHandler
	lease Lease
	// stages are the task's stages, read once when the run starts.
	stages []string
	// cp is the last saved checkpoint and ver its version (0: none stored).
	cp  Checkpoint
	ver int64
	// lost receives the loss of the lease (once).
	lost <-chan error
}

// execute runs the remaining stages of t under lease: it loads the checkpoint to start from,
// publishes TaskStarted, keeps the lease and the progress heartbeat alive, then runs the
// stages one by one (each attempt between two boundary checks, each success checkpointed)
// until the last one completes or a step ends the run.
func (r *Runner) execute(ctx context.Context, t *taskRun, lease Lease, fromCheckpoint bool) outcome {
	h, err := r.handler(t.spec.Handler)
	if err != nil {
		return outcome{EventTaskFailed, err.Error()}
	}
	run := &stageRun{r: r, t: t, h: h, lease: lease, stages: t.spec.Stages}
	if err := run.loadCheckpoint(ctx, fromCheckpoint); err != nil {
		return outcome{EventTaskFailed, "checkpoint unavailable: " + err.Error()}
	}
	if err := run.start(ctx); err != nil {
		return outcome{EventTaskFailed, "publishing TaskStarted: " + err.Error()}
	}
	lost, stop := r.keepLease(ctx, t, lease)
	defer stop()
	run.lost = lost

	attempt := 1
	for i := run.cp.LastCompletedStageIndex + 1; i < len(run.stages); {
		if out, end := run.boundary(); end {
			return out
		}
		data, ran, err := run.attempt(i, attempt)
		if !ran {
			return outcome{EventTaskCancelled, "cancelled"}
		}
		if err != nil {
			if out, end := run.failed(i, attempt, err); end {
				return out
			}
			attempt++
			continue
		}
		if err := run.commit(ctx, i, data); err != nil {
			return outcome{EventTaskFailed, fmt.Sprintf("checkpoint after stage %s: %v", run.stages[i], err)}
		}
		attempt = 1
		i++
	}
	return outcome{EventTaskCompleted, ""}
}

// loadCheckpoint sets the checkpoint the run starts from: the stored one (none stored: the
// start) when fromCheckpoint, else the start, after removing the stored one. A checkpoint
// without context data takes the task's.
func (s *stageRun) loadCheckpoint(ctx context.Context, fromCheckpoint bool) error {
	s.cp = Checkpoint{LastCompletedStageIndex: -1}
	if fromCheckpoint {
		switch c, err := s.r.st.Checkpoints.Get(ctx, s.t.spec.TaskID); {
		case err == nil:
			s.cp, s.ver = c, c.Version
		case !redstate.IsCode(err, redstate.ENOTFOUND):
			return err
		}
	} else if err := s.r.st.Checkpoints.Remove(ctx, s.t.spec.TaskID); err != nil {
		return err
	}
	if s.cp.ContextData == nil {
		s.cp.ContextData = cloneMap(s.t.spec.ContextData)
	}
	return nil
}

// start records where the run starts (the last completed stage, no failed attempt yet) and
// publishes TaskStarted. A task that ran before (a retry of a FAILED one, a resume of a PAUSED
// one) also refreshes its plan, which read FAILED or PAUSED because of it and now runs again;
// a first start needs none (StartPlan published PlanStarted).
func (s *stageRun) start(ctx context.Context) error {
	s.r.mu.Lock()
	s.t.lastCompleted = s.cp.LastCompletedStageIndex
	s.t.spec.Attempts = 0
	again := s.t.status != TaskCreated && s.t.status != TaskRunning
	s.r.mu.Unlock()
	if err := s.r.emitTask(ctx, s.t, EventTaskStarted, ""); err != nil {
		return err
	}
	if again {
		s.r.refreshPlan(ctx, s.t.spec.PlanID)
	}
	return nil
}

// keepLease renews lease in the background and publishes t's progress heartbeat every
// HeartbeatInterval until stop is called (stop waits for the heartbeat to end). lost receives
// the lease's loss once, and the heartbeat stops at that moment: a holder that lost its lock
// must not publish RUNNING over the state of the task's next owner.
func (r *Runner) keepLease(ctx context.Context, t *taskRun, lease Lease) (lost <-chan error, stop func()) {
	renewCtx, stopRenew := context.WithCancel(ctx)
	renewals := AutoRenew(renewCtx, r.st.Locks, lease, r.opts.LockTTL, r.opts.LockTTL/3)
	lostCh := make(chan error, 1)
	lockGone := make(chan struct{})
	go func() {
		if err, ok := <-renewals; ok && err != nil {
			lostCh <- err
			close(lockGone)
		}
	}()
	hbDone := make(chan struct{})
	hbEnded := make(chan struct{})
	go func() {
		defer close(hbEnded)
		tk := time.NewTicker(r.opts.HeartbeatInterval)
		defer tk.Stop()
		for {
			select {
			case <-hbDone:
				return
			case <-lockGone:
				return
			case <-tk.C:
				r.heartbeat(ctx, t)
			}
		}
	}()
	return lostCh, func() {
		close(hbDone)
		<-hbEnded
		stopRenew()
	}
}

// boundary is the check at a stage boundary: end=true with the outcome when the lease was
// lost, the task was cancelled or paused, or the runner is stopping.
func (s *stageRun) boundary() (out outcome, end bool) {
	select {
	case err := <-s.lost:
		return outcome{EventTaskFailed, "tenant lock lost: " + err.Error()}, true
	default:
	}
	s.r.mu.Lock()
	cancelled, pause := s.t.cancelled, s.t.pauseRequested
	s.r.mu.Unlock()
	switch {
	case cancelled:
		return outcome{EventTaskCancelled, "cancelled"}, true
	case pause:
		return outcome{EventTaskPaused, ""}, true
	case s.r.stopping():
		return outcome{EventTaskFailed, ReasonInterrupted + ": executor shut down"}, true
	}
	return outcome{}, false
}

// attempt calls the handler for stage i under a context that Cancel and shutdown cancel, and
// reports the call to the observer. ran=false (the task is cancelled) when Cancel ran after
// the boundary check, before the stage could be cancelled.
func (s *stageRun) attempt(i, attempt int) (data map[string]string, ran bool, err error) {
	t := s.t
	sctx, scancel := context.WithCancel(s.r.stageBase)
	s.r.mu.Lock()
	t.stageCancel = scancel
	if t.cancelled {
		s.r.mu.Unlock()
		scancel()
		return nil, false, nil
	}
	s.r.mu.Unlock()
	req := StageRequest{TaskID: t.spec.TaskID, TenantID: t.spec.TenantID, PlanID: t.spec.PlanID, Stage: s.stages[i], StageIndex: i,
		ContextData: cloneMap(s.cp.ContextData), FencingToken: s.lease.Fence, Attempt: attempt}
	began := time.Now()
	data, err = callStage(sctx, s.h, req)
	scancel()
	if s.r.opts.Observer != nil {
		s.r.opts.Observer.StageFinished(t.spec.Handler, err == nil, time.Since(began))
	}
	return data, true, err
}

// failed handles a failed attempt of stage i: end=true with the outcome when the task was
// cancelled, the runner shut down or the attempts are used up; otherwise it waits the retry
// delay (cut short by a wake-up or shutdown) before the next attempt.
func (s *stageRun) failed(i, attempt int, err error) (out outcome, end bool) {
	t := s.t
	s.r.mu.Lock()
	cancelled := t.cancelled
	t.spec.Attempts = attempt
	s.r.mu.Unlock()
	stage := s.stages[i]
	switch {
	case cancelled:
		return outcome{EventTaskCancelled, "cancelled"}, true
	case s.r.stageBase.Err() != nil:
		return outcome{EventTaskFailed, ReasonInterrupted + ": executor shut down"}, true
	case attempt >= t.spec.Retry.MaxAttempts:
		return outcome{EventTaskFailed, fmt.Sprintf("stage %s (index %d) failed after %d attempt(s): %v", stage, i, attempt, err)}, true
	}
	delay := t.spec.Retry.Delay(attempt)
	s.r.log.Warn("executor: stage failed; retrying", "task", t.spec.TaskID, "stage", stage, "attempt", attempt, "delay", delay.String(), "error", err)
	select {
	case <-time.After(delay):
	case <-t.wake:
	case <-s.r.stopCh:
	}
	return outcome{}, false
}

// commit saves the checkpoint after stage i completed with data (compare-and-set against the
// last saved version) and publishes TaskStageCompleted.
func (s *stageRun) commit(ctx context.Context, i int, data map[string]string) error {
	t := s.t
	next := s.cp.Clone()
	next.Version, next.SavedAt = 0, time.Time{}
	next.LastCompletedStageIndex = i
	next.CompletedStages = append(next.CompletedStages, s.stages[i])
	if data != nil {
		next.ContextData = data
	}
	v, err := s.r.putCheckpoint(ctx, t.spec.TaskID, next, s.ver)
	if err != nil {
		return err
	}
	s.cp, s.ver = next, v
	s.cp.Version = v
	s.r.mu.Lock()
	t.lastCompleted = i
	s.r.mu.Unlock()
	if err := s.r.emitStage(ctx, t, i); err != nil {
		s.r.log.Warn("executor: publishing TaskStageCompleted", "task", t.spec.TaskID, "stage", i, "error", err)
	}
	return nil
}

// putCheckpoint is a CAS Put with a few retries while the store is unavailable. A version
// mismatch or a backwards index is never retried: another writer moved the checkpoint, so
// this run must stop.
func (r *Runner) putCheckpoint(ctx context.Context, id string, cp Checkpoint, ver int64) (int64, error) {
	var err error
	for i := range 5 {
		var v int64
		v, err = r.st.Checkpoints.Put(ctx, id, cp, ver)
		if err == nil {
			return v, nil
		}
		if !redstate.IsCode(err, redstate.EUNAVAILABLE) {
			return 0, err
		}
		time.Sleep(time.Duration(100*(i+1)) * time.Millisecond)
	}
	return 0, err
}

// callStage runs h, turning a panic into an error.
func callStage(ctx context.Context, h StageHandler, req StageRequest) (data map[string]string, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("stage handler panicked: %v", p)
		}
	}()
	return h(ctx, req)
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
