package executor

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/redstate/redstate"
)

// Runner is the stage executor of seed 002 on the state layer: it runs plans of tasks with at
// most MaxConcurrency tasks of a plan at once and at most one running task per tenant across
// every instance (the tenant lock, renewed while the task runs), checkpoints after every
// stage, publishes task and plan events to the projections (and OnEvent hooks), heartbeats
// progress, pauses at stage boundaries, cancels, retries (from the checkpoint or from the
// start), and marks RUNNING tasks whose lock expired (their instance died) as FAILED
// ("interrupted"). See docs/executor.md.
type Runner struct {
	opts Options
	st   Stores
	log  *slog.Logger

	hmu      sync.RWMutex
	handlers map[string]StageHandler

	hookMu sync.RWMutex
	hooks  []func(Event)

	mu    sync.Mutex
	plans map[string]*planRun
	tasks map[string]*taskRun

	stopCh     chan struct{} // closed when shutdown begins
	stopOnce   sync.Once
	stageBase  context.Context // parent of stage contexts; cancelled ShutdownTimeout after shutdown
	stageAbort context.CancelFunc
	wg         sync.WaitGroup

	planSeq seqClock

	beatMu   sync.Mutex
	lastBeat time.Time // last successful liveness heartbeat
}

// New returns a runner on opts.Stores. Register handlers with Handle, then call Run (which
// adds the orphan scan, the metrics pass and graceful shutdown). Errors: EINVALID.
func New(opts Options) (*Runner, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	base, abort := context.WithCancel(context.Background())
	return &Runner{
		opts: o, st: o.Stores, log: o.Logger,
		handlers: map[string]StageHandler{},
		plans:    map[string]*planRun{}, tasks: map[string]*taskRun{},
		stopCh: make(chan struct{}), stageBase: base, stageAbort: abort,
	}, nil
}

// Options returns the effective options.
func (r *Runner) Options() Options { return r.opts }

// Run runs the orphan scan and the metrics pass until ctx ends, then shuts down: no task
// starts any more, waiting tasks stop waiting, running stages get ShutdownTimeout to finish
// (then their contexts are cancelled), and a task stopped this way is marked FAILED
// ("interrupted: executor shut down", retryable from its checkpoint) and its lock released.
// Run returns when every task goroutine has returned.
func (r *Runner) Run(ctx context.Context) error {
	var loops sync.WaitGroup
	r.beat(ctx, true)
	loops.Go(func() { r.every(ctx, r.opts.LivenessInterval, func(c context.Context) { r.beat(c, true) }) })
	loops.Go(func() { r.every(ctx, r.opts.OrphanScanInterval, func(c context.Context) { _, _ = r.ScanOrphans(c) }) })
	loops.Go(func() { r.every(ctx, controlPollInterval, r.applyControls) })
	if r.st.Inspector != nil && r.opts.Observer != nil {
		loops.Go(func() { r.every(ctx, r.opts.StatsInterval, func(c context.Context) { _, _ = r.InspectState(c) }) })
	}
	<-ctx.Done()
	loops.Wait()
	r.Shutdown()
	return nil
}

// beat renews this instance's liveness (always when force, else only when the last renewal is
// older than LivenessInterval). A failure is logged; the next tick retries.
func (r *Runner) beat(ctx context.Context, force bool) {
	r.beatMu.Lock()
	defer r.beatMu.Unlock()
	if !force && time.Since(r.lastBeat) < r.opts.LivenessInterval {
		return
	}
	if err := r.st.Registry.Heartbeat(ctx, r.opts.InstanceID, r.opts.LivenessTTL); err != nil {
		if ctx.Err() == nil {
			r.log.Warn("executor: liveness heartbeat failed; other instances may take this instance's tasks for orphans",
				"instance", r.opts.InstanceID, "error", err)
		}
		return
	}
	r.lastBeat = time.Now()
}

// Shutdown stops the runner as Run does when its context ends (idempotent).
func (r *Runner) Shutdown() {
	r.stopOnce.Do(func() { close(r.stopCh) })
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(r.opts.ShutdownTimeout):
		r.log.Warn("executor: running stages did not finish within the shutdown timeout; cancelling them")
		r.stageAbort()
		<-done
	}
	r.stageAbort()
}

func (r *Runner) stopping() bool {
	select {
	case <-r.stopCh:
		return true
	default:
		return false
	}
}

func (r *Runner) every(ctx context.Context, d time.Duration, f func(context.Context)) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f(ctx)
		}
	}
}

// CreatePlan validates def, stores its task specs, publishes PlanReady and TaskCreated (which
// sets the tenant index) and, when start is true, starts it (StartPlan). It returns the plan
// with generated ids filled in. The plan and task ids are claimed in the store first
// (TaskRegistry.ClaimIDs), so an id used before, on any instance and across restarts, is
// refused. Errors: EINVALID (bad definition or unknown handler), ECONFLICT (a plan or task id
// is in use), EUNAVAILABLE.
func (r *Runner) CreatePlan(ctx context.Context, def PlanDef, start bool) (PlanDef, error) {
	def, err := validatePlan(def, r.opts.DefaultRetry)
	if err != nil {
		return def, err
	}
	for _, t := range def.Tasks {
		if !r.HasHandler(t.Handler) {
			return def, redstate.Errorf(redstate.EINVALID, "task %s: no stage handler %q is registered (configure executor.handlers)", t.TaskID, t.Handler)
		}
	}
	p := &planRun{id: def.PlanID, sem: make(chan struct{}, def.MaxConcurrency), maxConc: def.MaxConcurrency}
	now := time.Now()
	runs := make([]*taskRun, 0, len(def.Tasks))
	for _, t := range def.Tasks {
		p.taskIDs = append(p.taskIDs, t.TaskID)
		runs = append(runs, &taskRun{plan: p, wake: make(chan struct{}, 1), lastCompleted: -1, status: TaskCreated, spec: TaskSpec{
			TaskID: t.TaskID, TenantID: t.TenantID, PlanID: def.PlanID, Stages: slices.Clone(t.Stages),
			Handler: t.Handler, ContextData: t.ContextData, Retry: t.Retry, CreatedAt: now.UTC(),
		}})
	}
	r.mu.Lock()
	if _, dup := r.plans[def.PlanID]; dup {
		r.mu.Unlock()
		return def, redstate.Errorf(redstate.ECONFLICT, "plan %s exists", def.PlanID)
	}
	for _, t := range runs {
		if _, dup := r.tasks[t.spec.TaskID]; dup {
			r.mu.Unlock()
			return def, redstate.Errorf(redstate.ECONFLICT, "task %s exists", t.spec.TaskID)
		}
	}
	r.mu.Unlock()
	if err := r.st.Registry.ClaimIDs(ctx, def.PlanID, p.taskIDs); err != nil {
		return def, err
	}
	r.mu.Lock()
	r.plans[def.PlanID] = p
	for _, t := range runs {
		r.tasks[t.spec.TaskID] = t
	}
	r.mu.Unlock()

	for _, t := range runs {
		if err := r.st.Registry.PutSpec(ctx, t.spec); err != nil {
			return def, err
		}
	}
	if err := r.emitPlan(ctx, PlanEvent{Type: EventPlanReady, PlanID: def.PlanID, TaskIDs: p.taskIDs, MaxConcurrency: def.MaxConcurrency}); err != nil {
		return def, err
	}
	for _, t := range runs {
		if err := r.emitTask(ctx, t, EventTaskCreated, ""); err != nil {
			return def, err
		}
	}
	if start {
		if err := r.StartPlan(ctx, def.PlanID); err != nil {
			return def, err
		}
	}
	return def, nil
}

// StartPlan starts every created task of a plan of this instance. Errors: ENOTFOUND.
func (r *Runner) StartPlan(ctx context.Context, planID string) error {
	r.mu.Lock()
	p, ok := r.plans[planID]
	if !ok {
		r.mu.Unlock()
		return redstate.Errorf(redstate.ENOTFOUND, "plan %s is not known to this instance", planID)
	}
	var start []*taskRun
	for _, id := range p.taskIDs {
		if t := r.tasks[id]; t != nil && t.state == stateIdle && t.status == TaskCreated && !t.cancelled {
			start = append(start, t)
		}
	}
	r.mu.Unlock()
	if err := r.emitPlan(ctx, PlanEvent{Type: EventPlanStarted, PlanID: planID}); err != nil {
		return err
	}
	for _, t := range start {
		r.launch(t, true)
	}
	return nil
}

// launch starts a goroutine that waits for a slot and the tenant lock, then runs t. It
// returns false if t is already waiting or running, or the runner is stopping.
func (r *Runner) launch(t *taskRun, fromCheckpoint bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t.state != stateIdle || r.stopping() {
		return false
	}
	t.state = stateWaiting
	t.fromCheckpoint = fromCheckpoint
	t.pauseRequested = false
	r.wg.Add(1)
	go r.drive(t)
	return true
}

// drive waits for a plan slot and the tenant lock, then runs the task.
func (r *Runner) drive(t *taskRun) {
	defer r.wg.Done()
	ctx := context.Background()
	for {
		if r.stopping() {
			r.setState(t, stateIdle)
			return
		}
		if stop, ev := r.checkWaiting(t); stop {
			if ev != "" {
				_ = r.emitTask(ctx, t, ev, "")
				if ev == EventTaskCancelled {
					r.finishCleanup(ctx, t, true)
				}
				r.refreshPlan(ctx, t.spec.PlanID)
			}
			return
		}
		select {
		case t.plan.sem <- struct{}{}:
		case <-t.wake:
			continue
		case <-r.stopCh:
			continue
		}
		lease, ok, err := r.st.Locks.TryAcquire(ctx, t.spec.TenantID, t.spec.TaskID, r.opts.LockTTL)
		if err == nil && ok {
			r.runLocked(ctx, t, lease)
			<-t.plan.sem
			return
		}
		<-t.plan.sem
		if err != nil {
			r.log.Warn("executor: tenant lock unavailable; retrying", "task", t.spec.TaskID, "tenant", t.spec.TenantID, "error", err)
		}
		select {
		case <-time.After(r.opts.LockRetryInterval):
		case <-t.wake:
		case <-r.stopCh:
		}
	}
}

// checkWaiting applies a pause or cancel requested while t waits: it returns stop=true and
// the event to publish ("" when none).
func (r *Runner) checkWaiting(t *taskRun) (bool, TaskEventType) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case t.cancelled:
		t.state = stateIdle
		return true, EventTaskCancelled
	case t.pauseRequested:
		t.state, t.pauseRequested = stateIdle, false
		return true, EventTaskPaused
	}
	return false, ""
}

func (r *Runner) setState(t *taskRun, s localState) {
	r.mu.Lock()
	t.state = s
	r.mu.Unlock()
}

// outcome is how a locked run ended.
type outcome struct {
	ev     TaskEventType // Completed, Paused, Failed, Cancelled, or "" (nothing to publish)
	reason string
}

// runLocked runs t while holding lease, then publishes the outcome and releases the lock.
func (r *Runner) runLocked(ctx context.Context, t *taskRun, lease Lease) {
	defer func() {
		if err := r.st.Locks.Release(ctx, lease.Tenant, lease.Token); err != nil && !redstate.IsCode(err, redstate.ECONFLICT) {
			r.log.Warn("executor: releasing the tenant lock", "tenant", lease.Tenant, "error", err)
		}
	}()
	// Another instance may have finished the task meanwhile (a concurrent retry).
	if p, err := r.st.Projections.GetTask(ctx, t.spec.TaskID); err == nil && (p.Status == TaskCompleted || p.Status == TaskCancelled) {
		r.mu.Lock()
		t.state, t.status = stateIdle, p.Status
		r.mu.Unlock()
		return
	}
	r.mu.Lock()
	if t.cancelled || t.pauseRequested {
		r.mu.Unlock()
		_, ev := r.checkWaiting(t)
		_ = r.emitTask(ctx, t, ev, "")
		if ev == EventTaskCancelled {
			r.finishCleanup(ctx, t, true)
		}
		r.refreshPlan(ctx, t.spec.PlanID)
		return
	}
	t.state = stateRunning
	fromCheckpoint := t.fromCheckpoint
	t.fromCheckpoint = true
	r.mu.Unlock()

	out := r.execute(ctx, t, lease, fromCheckpoint)

	r.mu.Lock()
	t.state, t.stageCancel = stateIdle, nil
	if out.ev == EventTaskPaused {
		t.pauseRequested = false
	}
	r.mu.Unlock()
	if out.ev == "" {
		return
	}
	// Publish only while still holding the lock: a holder that lost it (expired, taken over,
	// marked interrupted by another instance) must not overwrite the newer state.
	if err := r.st.Locks.Renew(ctx, lease.Tenant, lease.Token, r.opts.LockTTL); redstate.IsCode(err, redstate.ECONFLICT) {
		r.log.Warn("executor: tenant lock lost before the outcome was published; leaving the task to its new owner",
			"task", t.spec.TaskID, "tenant", t.spec.TenantID, "outcome", out.ev, "reason", out.reason)
		return
	}
	if out.ev == EventTaskFailed || out.ev == EventTaskCancelled {
		r.saveReason(ctx, t, out.reason)
	}
	if err := r.emitTask(ctx, t, out.ev, out.reason); err != nil {
		r.log.Error("executor: publishing the task outcome", "task", t.spec.TaskID, "event", out.ev, "error", err)
	}
	if out.ev == EventTaskCompleted || out.ev == EventTaskCancelled {
		r.finishCleanup(ctx, t, true)
	}
	if r.opts.Observer != nil {
		r.opts.Observer.TaskFinished(out.ev.Status())
	}
	lvl := slog.LevelInfo
	if out.ev == EventTaskFailed {
		lvl = slog.LevelWarn
	}
	r.log.Log(ctx, lvl, "executor: task "+string(out.ev.Status()), "task", t.spec.TaskID, "tenant", t.spec.TenantID, "plan", t.spec.PlanID, "reason", out.reason)
	r.refreshPlan(ctx, t.spec.PlanID)
}

// finishCleanup removes a finished task's checkpoint (completed or cancelled tasks).
func (r *Runner) finishCleanup(ctx context.Context, t *taskRun, removeCheckpoint bool) {
	if removeCheckpoint {
		if err := r.st.Checkpoints.Remove(ctx, t.spec.TaskID); err != nil {
			r.log.Warn("executor: removing the checkpoint", "task", t.spec.TaskID, "error", err)
		}
	}
}

func (r *Runner) saveReason(ctx context.Context, t *taskRun, reason string) {
	r.mu.Lock()
	t.spec.Reason = reason
	spec := t.spec
	r.mu.Unlock()
	if err := r.st.Registry.PutSpec(ctx, spec); err != nil {
		r.log.Warn("executor: saving the task spec", "task", spec.TaskID, "error", err)
	}
}

// execute runs the remaining stages of t under lease.
func (r *Runner) execute(ctx context.Context, t *taskRun, lease Lease, fromCheckpoint bool) outcome {
	id := t.spec.TaskID
	h, err := r.handler(t.spec.Handler)
	if err != nil {
		return outcome{EventTaskFailed, err.Error()}
	}
	var cp Checkpoint
	var ver int64
	if fromCheckpoint {
		switch c, err := r.st.Checkpoints.Get(ctx, id); {
		case err == nil:
			cp, ver = c, c.Version
		case redstate.IsCode(err, redstate.ENOTFOUND):
			cp = Checkpoint{LastCompletedStageIndex: -1}
		default:
			return outcome{EventTaskFailed, "checkpoint unavailable: " + err.Error()}
		}
	} else {
		if err := r.st.Checkpoints.Remove(ctx, id); err != nil {
			return outcome{EventTaskFailed, "checkpoint unavailable: " + err.Error()}
		}
		cp = Checkpoint{LastCompletedStageIndex: -1}
	}
	if cp.ContextData == nil {
		cp.ContextData = cloneMap(t.spec.ContextData)
	}
	r.mu.Lock()
	t.lastCompleted = cp.LastCompletedStageIndex
	t.spec.Attempts = 0
	r.mu.Unlock()

	if err := r.emitTask(ctx, t, EventTaskStarted, ""); err != nil {
		return outcome{EventTaskFailed, "publishing TaskStarted: " + err.Error()}
	}
	renewCtx, stopRenew := context.WithCancel(ctx)
	defer stopRenew()
	renewals := AutoRenew(renewCtx, r.st.Locks, lease, r.opts.LockTTL, r.opts.LockTTL/3)
	// lost receives the lease loss once; lockGone closes at the same moment so that the
	// heartbeat stops at once: a holder that lost its lock must not publish RUNNING over the
	// state of the task's next owner.
	lost := make(chan error, 1)
	lockGone := make(chan struct{})
	go func() {
		if err, ok := <-renewals; ok && err != nil {
			lost <- err
			close(lockGone)
		}
	}()
	hbDone := make(chan struct{})
	var hb sync.WaitGroup
	hb.Go(func() {
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
	})
	defer func() { close(hbDone); hb.Wait() }()

	attempt := 1
	stages := t.spec.Stages
	for i := cp.LastCompletedStageIndex + 1; i < len(stages); {
		// Stage boundary.
		select {
		case err := <-lost:
			return outcome{EventTaskFailed, "tenant lock lost: " + err.Error()}
		default:
		}
		r.mu.Lock()
		cancelled, pause := t.cancelled, t.pauseRequested
		r.mu.Unlock()
		switch {
		case cancelled:
			return outcome{EventTaskCancelled, "cancelled"}
		case pause:
			return outcome{EventTaskPaused, ""}
		case r.stopping():
			return outcome{EventTaskFailed, ReasonInterrupted + ": executor shut down"}
		}

		sctx, scancel := context.WithCancel(r.stageBase)
		r.mu.Lock()
		t.stageCancel = scancel
		if t.cancelled { // Cancel ran after the check above, before the stage could be cancelled
			r.mu.Unlock()
			scancel()
			return outcome{EventTaskCancelled, "cancelled"}
		}
		r.mu.Unlock()
		req := StageRequest{TaskID: id, TenantID: t.spec.TenantID, PlanID: t.spec.PlanID, Stage: stages[i], StageIndex: i,
			ContextData: cloneMap(cp.ContextData), FencingToken: lease.Fence, Attempt: attempt}
		began := time.Now()
		data, err := callStage(sctx, h, req)
		scancel()
		if r.opts.Observer != nil {
			r.opts.Observer.StageFinished(t.spec.Handler, err == nil, time.Since(began))
		}
		if err != nil {
			r.mu.Lock()
			cancelled = t.cancelled
			t.spec.Attempts = attempt
			r.mu.Unlock()
			switch {
			case cancelled:
				return outcome{EventTaskCancelled, "cancelled"}
			case r.stageBase.Err() != nil:
				return outcome{EventTaskFailed, ReasonInterrupted + ": executor shut down"}
			case attempt >= t.spec.Retry.MaxAttempts:
				return outcome{EventTaskFailed, fmt.Sprintf("stage %s (index %d) failed after %d attempt(s): %v", stages[i], i, attempt, err)}
			}
			delay := t.spec.Retry.Delay(attempt)
			r.log.Warn("executor: stage failed; retrying", "task", id, "stage", stages[i], "attempt", attempt, "delay", delay.String(), "error", err)
			attempt++
			select {
			case <-time.After(delay):
			case <-t.wake:
			case <-r.stopCh:
			}
			continue
		}
		next := cp.Clone()
		next.Version, next.SavedAt = 0, time.Time{}
		next.LastCompletedStageIndex = i
		next.CompletedStages = append(next.CompletedStages, stages[i])
		if data != nil {
			next.ContextData = data
		}
		v, err := r.putCheckpoint(ctx, id, next, ver)
		if err != nil {
			return outcome{EventTaskFailed, fmt.Sprintf("checkpoint after stage %s: %v", stages[i], err)}
		}
		cp, ver = next, v
		cp.Version = v
		r.mu.Lock()
		t.lastCompleted = i
		r.mu.Unlock()
		if err := r.emitStage(ctx, t, i); err != nil {
			r.log.Warn("executor: publishing TaskStageCompleted", "task", id, "stage", i, "error", err)
		}
		attempt = 1
		i++
	}
	return outcome{EventTaskCompleted, ""}
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

// ReasonInterrupted starts the failure reason of a task whose run was interrupted (its
// instance died or shut down); such a task is retryable from its checkpoint.
const ReasonInterrupted = "interrupted"
