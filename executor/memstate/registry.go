package memstate

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/executor"
)

var _ executor.TaskRegistry = (*Registry)(nil)

// Registry is the memory executor.TaskRegistry (task specs and the running set). Safe for
// concurrent use.
type Registry struct {
	opts    Options
	mu      sync.Mutex
	specs   map[string]entry[executor.TaskSpec]
	running map[string]struct{}
	claims  map[string]entry[struct{}] // "plan:<id>" / "task:<id>"
	owners  map[string]string          // running task -> instance
	alive   map[string]time.Time       // instance -> liveness expiry
	inbox   map[string]entry[[]executor.ControlCommand]
	writes  int
}

// NewRegistry returns an empty registry (spec TTL default executor.DefaultProjectionTTL).
func NewRegistry(opts Options) *Registry {
	return &Registry{opts: opts.withDefaults(executor.DefaultProjectionTTL), specs: map[string]entry[executor.TaskSpec]{}, running: map[string]struct{}{},
		claims: map[string]entry[struct{}]{}, owners: map[string]string{}, alive: map[string]time.Time{},
		inbox: map[string]entry[[]executor.ControlCommand]{}}
}

// PutSpec implements executor.TaskRegistry.
func (r *Registry) PutSpec(_ context.Context, spec executor.TaskSpec) error {
	if err := executor.ValidateSpec(spec); err != nil {
		return err
	}
	b, err := executor.EncodeSpec(spec) // deep copy through JSON, as Redis stores it
	if err != nil {
		return err
	}
	cp, _ := executor.DecodeSpec(b)
	now := r.opts.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.specs[spec.TaskID] = entry[executor.TaskSpec]{val: cp, expires: now.Add(r.opts.TTL)}
	if r.writes++; r.writes%sweepEvery == 0 {
		sweep(r.specs, now)
	}
	return nil
}

// GetSpec implements executor.TaskRegistry.
func (r *Registry) GetSpec(_ context.Context, taskID string) (executor.TaskSpec, error) {
	if err := executor.ValidateID("taskId", taskID); err != nil {
		return executor.TaskSpec{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.specs[taskID]
	if !ok || e.expired(r.opts.Now()) {
		delete(r.specs, taskID)
		return executor.TaskSpec{}, redstate.Errorf(redstate.ENOTFOUND, "task spec %s not found", taskID)
	}
	b, _ := executor.EncodeSpec(e.val)
	return executor.DecodeSpec(b)
}

// MarkRunning implements executor.TaskRegistry.
func (r *Registry) MarkRunning(_ context.Context, taskID string) error {
	if err := executor.ValidateID("taskId", taskID); err != nil {
		return err
	}
	r.mu.Lock()
	r.running[taskID] = struct{}{}
	r.mu.Unlock()
	return nil
}

// ClearRunning implements executor.TaskRegistry.
func (r *Registry) ClearRunning(_ context.Context, taskID string) error {
	if err := executor.ValidateID("taskId", taskID); err != nil {
		return err
	}
	r.mu.Lock()
	delete(r.running, taskID)
	delete(r.owners, taskID)
	r.mu.Unlock()
	return nil
}

// SetOwner implements executor.TaskRegistry.
func (r *Registry) SetOwner(_ context.Context, taskID, instance string) error {
	if err := executor.ValidateID("taskId", taskID); err != nil {
		return err
	}
	if err := executor.ValidateID("instance", instance); err != nil {
		return err
	}
	r.mu.Lock()
	r.owners[taskID] = instance
	r.mu.Unlock()
	return nil
}

// Owner implements executor.TaskRegistry.
func (r *Registry) Owner(_ context.Context, taskID string) (string, error) {
	if err := executor.ValidateID("taskId", taskID); err != nil {
		return "", err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.owners[taskID], nil
}

// Heartbeat implements executor.TaskRegistry.
func (r *Registry) Heartbeat(_ context.Context, instance string, ttl time.Duration) error {
	if err := executor.ValidateID("instance", instance); err != nil {
		return err
	}
	if ttl < time.Millisecond {
		return redstate.Errorf(redstate.EINVALID, "liveness ttl must be at least 1ms, got %s", ttl)
	}
	now := r.opts.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.alive[instance] = now.Add(ttl)
	for id, exp := range r.alive { // bounded by the instances alive within one TTL
		if !exp.After(now) {
			delete(r.alive, id)
		}
	}
	return nil
}

// Alive implements executor.TaskRegistry.
func (r *Registry) Alive(_ context.Context, instance string) (bool, error) {
	if err := executor.ValidateID("instance", instance); err != nil {
		return false, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	exp, ok := r.alive[instance]
	return ok && exp.After(r.opts.Now()), nil
}

// RunningTasks implements executor.TaskRegistry.
func (r *Registry) RunningTasks(context.Context) ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.running))
	for id := range r.running {
		out = append(out, id)
	}
	slices.Sort(out)
	return out, nil
}

// Inspector is the memory executor.Inspector over a set of memory stores (nil fields count 0).
type Inspector struct {
	Checkpoints *Checkpoints
	Projections *Projections
	Index       *TenantIndex
	Locks       *Locks
	Registry    *Registry
}

// Inspect implements executor.Inspector.
func (in Inspector) Inspect(context.Context) (executor.StateStats, error) {
	st := executor.StateStats{Keys: map[string]int64{}, Locks: map[string]string{}}
	if s := in.Checkpoints; s != nil {
		s.mu.Lock()
		st.Keys["ckpt"] = live(s.m, s.opts.Now())
		s.mu.Unlock()
	}
	if s := in.Projections; s != nil {
		s.mu.Lock()
		st.Keys["task"] = live(s.tasks, s.opts.Now())
		st.Keys["plan"] = live(s.plans, s.opts.Now())
		s.mu.Unlock()
	}
	if s := in.Index; s != nil {
		s.mu.Lock()
		st.Keys["index"] = live(s.m, s.opts.Now())
		s.mu.Unlock()
	}
	if s := in.Registry; s != nil {
		s.mu.Lock()
		st.Keys["spec"] = live(s.specs, s.opts.Now())
		s.mu.Unlock()
	}
	if l := in.Locks; l != nil {
		for key, token := range l.leases.Held(lockPrefix) {
			owner, _, _ := strings.Cut(token, "#")
			st.Locks[strings.TrimSuffix(strings.TrimPrefix(key, lockPrefix), "}")] = owner
		}
		st.Keys["lock"] = int64(len(st.Locks))
	}
	return st, nil
}

func live[V any](m map[string]entry[V], now time.Time) int64 {
	var n int64
	for _, e := range m {
		if !e.expired(now) {
			n++
		}
	}
	return n
}

// ClaimIDs implements executor.TaskRegistry: all ids or none, under the registry's lock.
func (r *Registry) ClaimIDs(_ context.Context, planID string, taskIDs []string) error {
	if err := executor.ValidateID("planId", planID); err != nil {
		return err
	}
	keys := []string{"plan:" + planID}
	for _, id := range taskIDs {
		if err := executor.ValidateID("taskId", id); err != nil {
			return err
		}
		keys = append(keys, "task:"+id)
	}
	now := r.opts.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, k := range keys {
		if e, ok := r.claims[k]; ok && !e.expired(now) || slices.Contains(keys[:i], k) {
			kind, id, _ := strings.Cut(k, ":")
			return executor.ClaimConflict(kind, id)
		}
	}
	for _, k := range keys {
		r.claims[k] = entry[struct{}]{expires: now.Add(r.opts.TTL)}
	}
	if r.writes++; r.writes%sweepEvery == 0 {
		sweep(r.claims, now)
	}
	return nil
}

// SendControl implements executor.TaskRegistry.
func (r *Registry) SendControl(_ context.Context, instance string, cmd executor.ControlCommand) error {
	if err := executor.ValidateControl(instance, cmd); err != nil {
		return err
	}
	now := r.opts.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.inbox[instance]
	if e.expired(now) {
		e.val = nil
	}
	r.inbox[instance] = entry[[]executor.ControlCommand]{val: append(e.val, cmd), expires: now.Add(executor.ControlTTL)}
	return nil
}

// TakeControls implements executor.TaskRegistry.
func (r *Registry) TakeControls(_ context.Context, instance string) ([]executor.ControlCommand, error) {
	if err := executor.ValidateID("instance", instance); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.inbox[instance]
	delete(r.inbox, instance)
	if !ok || e.expired(r.opts.Now()) {
		return nil, nil
	}
	return e.val, nil
}
