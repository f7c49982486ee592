package executor

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Runner is the stage executor on the state layer: it runs plans of tasks with at most
// MaxConcurrency tasks of a plan at once and at most one running task per tenant across every
// instance (the tenant lock, renewed while the task runs), checkpoints after every stage, publishes
// task and plan events to the projections (and OnEvent hooks), heartbeats progress, pauses at stage
// boundaries, cancels, retries (from the checkpoint or from the start), and marks RUNNING tasks
// whose lock expired (their instance died) as FAILED ("interrupted"). See docs/executor.md.
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

// stopping reports whether shutdown has begun.
func (r *Runner) stopping() bool {
	select {
	case <-r.stopCh:
		return true
	default:
		return false
	}
}

// every calls f every d until ctx ends.
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

// ReasonInterrupted starts the failure reason of a task whose run was interrupted (its
// instance died or shut down); such a task is retryable from its checkpoint.
const ReasonInterrupted = "interrupted"
