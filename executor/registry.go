package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/redstate/redstate"
)

// RetryPolicy is a task's automatic retry policy: a failed stage is tried again (from the
// task's checkpoint, without releasing the tenant lock) until MaxAttempts attempts failed.
type RetryPolicy struct {
	// MaxAttempts is the number of attempts of a run, at least 1 (1 = no automatic retry).
	MaxAttempts int `json:"maxAttempts"`
	// Backoff is the wait before the second attempt; it doubles per attempt up to MaxBackoff.
	Backoff time.Duration `json:"backoff"`
	// MaxBackoff caps the wait (0: no cap).
	MaxBackoff time.Duration `json:"maxBackoff"`
}

// UnmarshalJSON reads a retry policy whose backoff and maxBackoff are integer nanoseconds (as
// stored) or duration strings ("1s", "250ms", "2m"). Unknown members are refused.
func (p *RetryPolicy) UnmarshalJSON(b []byte) error {
	var w struct {
		MaxAttempts int             `json:"maxAttempts"`
		Backoff     json.RawMessage `json:"backoff"`
		MaxBackoff  json.RawMessage `json:"maxBackoff"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return fmt.Errorf("retry: %w", err)
	}
	backoff, err := jsonDuration("retry.backoff", w.Backoff)
	if err != nil {
		return err
	}
	maxBackoff, err := jsonDuration("retry.maxBackoff", w.MaxBackoff)
	if err != nil {
		return err
	}
	*p = RetryPolicy{MaxAttempts: w.MaxAttempts, Backoff: backoff, MaxBackoff: maxBackoff}
	return nil
}

// jsonDuration reads a JSON duration: absent or null (0), integer nanoseconds, or a Go
// duration string.
func jsonDuration(field string, raw json.RawMessage) (time.Duration, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("%s: %q is not a duration (write e.g. \"1s\", \"250ms\" or integer nanoseconds)", field, s)
		}
		return d, nil
	}
	var n int64
	if err := json.Unmarshal(raw, &n); err != nil {
		return 0, fmt.Errorf("%s must be a duration string such as \"1s\" or integer nanoseconds", field)
	}
	return time.Duration(n), nil
}

// Delay returns the wait before attempt n+1 after n failed attempts (n >= 1).
func (p RetryPolicy) Delay(n int) time.Duration {
	d := p.Backoff
	for i := 1; i < n && d > 0; i++ {
		d *= 2
		if p.MaxBackoff > 0 && d >= p.MaxBackoff {
			break
		}
	}
	if p.MaxBackoff > 0 && d > p.MaxBackoff {
		d = p.MaxBackoff
	}
	return d
}

// TaskSpec is what the runtime needs to run a task again on any instance (after a restart the
// aggregates are gone; the projection has no handler, context or retry policy). It is stored
// as JSON at Keys.Spec(taskId) with the projection TTL. Runtime addition to the seed's keys.
type TaskSpec struct {
	TaskID   string   `json:"taskId"`
	TenantID string   `json:"tenantId"`
	PlanID   string   `json:"planId"`
	Stages   []string `json:"stages"`
	// Handler names the stage handler (a registered Go function or a configured webhook).
	Handler string `json:"handler"`
	// ContextData is the initial context of a run from the start.
	ContextData map[string]string `json:"contextData,omitempty"`
	Retry       RetryPolicy       `json:"retry"`
	// Reason is why the task last failed or was cancelled ("interrupted" for an orphan).
	Reason string `json:"reason,omitempty"`
	// Attempts counts the attempts of the current run.
	Attempts  int       `json:"attempts"`
	CreatedAt time.Time `json:"createdAt"`
}

// EncodeSpec / DecodeSpec are the stored JSON of a TaskSpec.
func EncodeSpec(s TaskSpec) ([]byte, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, redstate.Wrap(redstate.EINTERNAL, err, "encode task spec")
	}
	return b, nil
}

// DecodeSpec parses a stored TaskSpec. Errors: EINTERNAL.
func DecodeSpec(b []byte) (TaskSpec, error) {
	var s TaskSpec
	if err := json.Unmarshal(b, &s); err != nil {
		return TaskSpec{}, redstate.Wrap(redstate.EINTERNAL, err, "decode task spec")
	}
	return s, nil
}

// TaskRegistry is the runtime's addition to the state layer: the task specs and the set of
// RUNNING task ids (Keys.Running) that the orphan scan reads instead of SCANning projections.
// Implementations are safe for concurrent use.
type TaskRegistry interface {
	// PutSpec stores spec (TTL: the projection TTL). Errors: EINVALID, EUNAVAILABLE.
	PutSpec(ctx context.Context, spec TaskSpec) error
	// GetSpec returns a task's spec. Errors: EINVALID, ENOTFOUND, EUNAVAILABLE.
	GetSpec(ctx context.Context, taskID string) (TaskSpec, error)
	// MarkRunning adds taskID to the running set. Errors: EINVALID, EUNAVAILABLE.
	MarkRunning(ctx context.Context, taskID string) error
	// ClearRunning removes taskID from the running set and forgets its owner.
	// Errors: EINVALID, EUNAVAILABLE.
	ClearRunning(ctx context.Context, taskID string) error
	// SetOwner records which runner instance runs taskID (until ClearRunning).
	// Errors: EINVALID, EUNAVAILABLE.
	SetOwner(ctx context.Context, taskID, instance string) error
	// Owner returns the instance recorded by SetOwner, "" when none is.
	// Errors: EINVALID, EUNAVAILABLE.
	Owner(ctx context.Context, taskID string) (string, error)
	// Heartbeat marks instance alive for ttl (Keys.Alive, SET PX). Errors: EINVALID, EUNAVAILABLE.
	Heartbeat(ctx context.Context, instance string, ttl time.Duration) error
	// Alive reports whether instance's last Heartbeat has not expired.
	// Errors: EINVALID, EUNAVAILABLE.
	Alive(ctx context.Context, instance string) (bool, error)
	// SendControl appends cmd to instance's control inbox (Keys.Control), which expires
	// ControlTTL after the last command. Errors: EINVALID, EUNAVAILABLE.
	SendControl(ctx context.Context, instance string, cmd ControlCommand) error
	// TakeControls removes and returns every command of instance's inbox, oldest first,
	// atomically (each command is taken once). Errors: EINVALID, EUNAVAILABLE.
	TakeControls(ctx context.Context, instance string) ([]ControlCommand, error)
	// RunningTasks returns the running set. Errors: EUNAVAILABLE.
	RunningTasks(ctx context.Context) ([]string, error)
	// ClaimIDs takes a new plan's id and its task ids, create-if-absent, for the projection TTL:
	// either every id is taken by this call, or none is and ECONFLICT names one id that was
	// already taken (by any instance, before or after a restart, a finished plan or task
	// included), so a reused id can never mix two tasks in one projection. Two concurrent claims
	// of one id: exactly one succeeds. Errors: EINVALID, ECONFLICT, EUNAVAILABLE.
	ClaimIDs(ctx context.Context, planID string, taskIDs []string) error
}

// ControlTTL is how long an instance's control inbox lives after its last command: commands
// for an instance that died are dropped with it (its tasks become orphans instead).
const ControlTTL = time.Minute

// Control actions routed to the instance that runs a task.
const (
	ControlPause  = "pause"
	ControlResume = "resume"
	ControlCancel = "cancel"
	// ControlRetry retries a FAILED task from its checkpoint on the instance that receives it
	// (sent by `redstate executor retry` to a live instance).
	ControlRetry = "retry"
	// ControlRetryFromStart retries a FAILED task from its first stage.
	ControlRetryFromStart = "retry-from-start"
)

// ControlCommand is a pause, resume or cancel of a task sent to the instance that runs it.
type ControlCommand struct {
	TaskID string    `json:"taskId"`
	Action string    `json:"action"`
	SentAt time.Time `json:"sentAt"`
}

// ClaimConflict is ClaimIDs' error for an id that is taken; kind is "plan" or "task".
func ClaimConflict(kind, id string) error {
	return redstate.Errorf(redstate.ECONFLICT, "%s id %q is already in use (ids are unique across instances and restarts for %s)",
		kind, id, DefaultProjectionTTL)
}

// StateStats is a snapshot of the executor's keyspace for monitoring (docs/executor.md, Metrics).
type StateStats struct {
	// Keys counts keys per type: "ckpt", "task", "plan", "index", "lock", "spec".
	Keys map[string]int64
	// Locks maps each locked tenant to the lock owner (a task id, or "orphan-scan").
	Locks map[string]string
}

// Inspector takes a StateStats snapshot (Redis: SCAN per type; memory: map sizes).
type Inspector interface {
	Inspect(ctx context.Context) (StateStats, error)
}

// ValidateSpec returns EINVALID unless spec's ids are valid and it has stages and a handler.
func ValidateSpec(spec TaskSpec) error {
	if err := ValidateID("taskId", spec.TaskID); err != nil {
		return err
	}
	if err := ValidateID("tenantId", spec.TenantID); err != nil {
		return err
	}
	if spec.PlanID != "" {
		if err := ValidateID("planId", spec.PlanID); err != nil {
			return err
		}
	}
	if len(spec.Stages) == 0 {
		return redstate.Errorf(redstate.EINVALID, "task %s has no stages", spec.TaskID)
	}
	if spec.Handler == "" {
		return redstate.Errorf(redstate.EINVALID, "task %s has no stage handler", spec.TaskID)
	}
	return nil
}
