package executor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"time"

	"github.com/redstate/redstate"
)

// StageRequest is what a stage handler receives for one stage of one task.
type StageRequest struct {
	TaskID     string `json:"taskId"`
	TenantID   string `json:"tenantId"`
	PlanID     string `json:"planId"`
	Stage      string `json:"stage"`
	StageIndex int    `json:"stageIndex"`
	// ContextData is the context after the previous stage (a copy; the handler may keep it).
	ContextData map[string]string `json:"contextData"`
	// FencingToken is the tenant lock's fence: it strictly increases per tenant from one
	// holder to the next, so a resource that remembers the highest one can reject a stale
	// holder.
	FencingToken int64 `json:"fencingToken"`
	// Attempt is the attempt of this run (1 for the first).
	Attempt int `json:"attempt"`
}

// StageHandler runs one stage. It returns the context data for the following stages (nil:
// unchanged) or an error (the attempt failed; the retry policy decides what follows). It must
// return soon after ctx ends (cancel, shutdown).
type StageHandler func(ctx context.Context, req StageRequest) (map[string]string, error)

// TaskDef describes a task of a new plan.
type TaskDef struct {
	// TaskID is optional (generated when empty).
	TaskID   string `json:"taskId,omitempty"`
	TenantID string `json:"tenantId"`
	// Stages are the ordered stage names.
	Stages []string `json:"stages"`
	// Handler names the stage handler (Runner.Handle or a configured webhook).
	Handler     string            `json:"handler"`
	ContextData map[string]string `json:"contextData,omitempty"`
	// Retry is the task's retry policy (zero: the runner's default).
	Retry RetryPolicy `json:"retry"`
}

// PlanDef describes a new plan.
type PlanDef struct {
	// PlanID is optional (generated when empty).
	PlanID string `json:"planId,omitempty"`
	// MaxConcurrency bounds the plan's tasks running at once on this instance (>= 1).
	MaxConcurrency int       `json:"maxConcurrency"`
	Tasks          []TaskDef `json:"tasks"`
}

// Stores are the state-layer stores the runner uses.
type Stores struct {
	Checkpoints CheckpointStore
	Projections ProjectionStore
	Index       TenantIndex
	Locks       TenantLocks
	Registry    TaskRegistry
	// Inspector feeds the key/lock metrics (nil: none).
	Inspector Inspector
}

// Observer receives the runtime's measurements (Metrics implements it). Methods must
// be cheap and safe for concurrent use.
type Observer interface {
	// ProjectionLag is the time from an event to its projection write.
	ProjectionLag(d time.Duration)
	// StageFinished is one stage execution of a handler.
	StageFinished(handler string, ok bool, d time.Duration)
	// TaskFinished is a task reaching a status that ends a run (COMPLETED, FAILED, CANCELLED, PAUSED).
	TaskFinished(status TaskStatus)
	// OrphanMarked is a RUNNING task whose lock had expired, marked FAILED (interrupted).
	OrphanMarked()
	// State is a keyspace snapshot: keys per type, held locks, and locks whose task is
	// already terminal (leaks).
	State(st StateStats, leaked int)
}

// Options configure a Runner.
type Options struct {
	Stores Stores
	// LockTTL is the tenant lock lease (default DefaultLockTTL, 9000 s); renewed every
	// LockTTL/3 while a task runs.
	LockTTL time.Duration
	// HeartbeatInterval is the TaskProgressEvent period (default 10 s).
	HeartbeatInterval time.Duration
	// OrphanScanInterval is how often RUNNING tasks of other instances are checked for a dead
	// owner or an expired lock (default 10 s).
	OrphanScanInterval time.Duration
	// InstanceID names this runner in Keys.Alive and as the owner of the tasks it runs (default
	// a random id). Two runners sharing a store must not share one.
	InstanceID string
	// LivenessTTL is how long this instance counts as alive after its last liveness heartbeat
	// (default 15 s). A RUNNING task whose owner's liveness has expired is an orphan: its lock
	// is taken over and the task marked FAILED (interrupted) by another instance's scan, long
	// before the lock's own TTL would expire it.
	LivenessTTL time.Duration
	// LivenessInterval is how often Run renews this instance's liveness (default 5 s, lowered to
	// LivenessTTL/2 when that is shorter). A set value above LivenessTTL/2 is an error.
	LivenessInterval time.Duration
	// StatsInterval is how often the keyspace is inspected for metrics (default 30 s).
	StatsInterval time.Duration
	// LockRetryInterval is the wait before trying a locked tenant again (default 1 s).
	LockRetryInterval time.Duration
	// ShutdownTimeout is how long running stages may finish after Run's context ends
	// (default 15 s); then their contexts are cancelled.
	ShutdownTimeout time.Duration
	// DefaultRetry applies to tasks without a retry policy (default 3 attempts, 1 s backoff,
	// 30 s cap).
	DefaultRetry RetryPolicy
	// Observer receives metrics (nil: none).
	Observer Observer
	Logger   *slog.Logger
}

func (o Options) withDefaults() (Options, error) {
	s := o.Stores
	if s.Checkpoints == nil || s.Projections == nil || s.Index == nil || s.Locks == nil || s.Registry == nil {
		return o, redstate.Errorf(redstate.EINVALID, "executor: Stores needs Checkpoints, Projections, Index, Locks and Registry")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.LockTTL, DefaultLockTTL)
	def(&o.HeartbeatInterval, DefaultHeartbeatInterval)
	def(&o.OrphanScanInterval, DefaultOrphanScanInterval)
	def(&o.LivenessTTL, DefaultLivenessTTL)
	if err := checkLiveness(o.LivenessTTL, o.LivenessInterval); err != nil {
		return o, redstate.Errorf(redstate.EINVALID, "executor: liveness interval %s", err)
	}
	def(&o.LivenessInterval, min(DefaultLivenessInterval, o.LivenessTTL/2))
	if o.InstanceID == "" {
		o.InstanceID = NewID("instance")
	}
	if err := ValidateID("instance", o.InstanceID); err != nil {
		return o, err
	}
	def(&o.StatsInterval, DefaultStatsInterval)
	def(&o.LockRetryInterval, time.Second)
	def(&o.ShutdownTimeout, 15*time.Second)
	if o.DefaultRetry.MaxAttempts <= 0 {
		o.DefaultRetry = RetryPolicy{MaxAttempts: 3, Backoff: time.Second, MaxBackoff: 30 * time.Second}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o, nil
}

// NewID returns prefix + "-" + 16 random hex digits.
func NewID(prefix string) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

// validatePlan checks def and fills in generated ids and default retry policies.
func validatePlan(def PlanDef, defRetry RetryPolicy) (PlanDef, error) {
	if def.PlanID == "" {
		def.PlanID = NewID("plan")
	}
	if err := ValidateID("planId", def.PlanID); err != nil {
		return def, err
	}
	if def.MaxConcurrency < 1 {
		return def, redstate.Errorf(redstate.EINVALID, "maxConcurrency must be at least 1, got %d", def.MaxConcurrency)
	}
	if len(def.Tasks) == 0 {
		return def, redstate.Errorf(redstate.EINVALID, "a plan needs at least one task")
	}
	seen := map[string]bool{}
	tasks := make([]TaskDef, len(def.Tasks))
	for i, t := range def.Tasks {
		if t.TaskID == "" {
			t.TaskID = NewID("task")
		}
		if seen[t.TaskID] {
			return def, redstate.Errorf(redstate.EINVALID, "task id %s appears twice", t.TaskID)
		}
		seen[t.TaskID] = true
		if t.Retry.MaxAttempts <= 0 {
			t.Retry = defRetry
		}
		if err := ValidateSpec(TaskSpec{TaskID: t.TaskID, TenantID: t.TenantID, PlanID: def.PlanID, Stages: t.Stages, Handler: t.Handler}); err != nil {
			return def, err
		}
		for _, s := range t.Stages {
			if s == "" {
				return def, redstate.Errorf(redstate.EINVALID, "task %s has an empty stage name", t.TaskID)
			}
		}
		tasks[i] = t
	}
	def.Tasks = tasks
	return def, nil
}
