package executor

import "time"

// LockInfo is one held tenant lock as operators see it (redisstate.Lister.Locks).
type LockInfo struct {
	// TenantID is the locked tenant.
	TenantID string `json:"tenantId"`
	// Holder is the lock's owner: a task id, or "orphan-scan".
	Holder string `json:"holder"`
	// Fence is the tenant's fencing counter: the fence of the current holder's lease (0 when
	// the counter is gone).
	Fence int64 `json:"fence"`
	// TimeLeftMs is the lease's remaining lifetime in milliseconds (server-side PTTL).
	TimeLeftMs int64 `json:"timeLeftMs"`
}

// CheckpointInfo is one stored checkpoint as operators see it (redisstate.Lister.Checkpoints):
// its header without the context data.
type CheckpointInfo struct {
	TaskID                  string    `json:"taskId"`
	Version                 int64     `json:"version"`
	LastCompletedStageIndex int       `json:"lastCompletedStageIndex"`
	CompletedStages         []string  `json:"completedStages"`
	ContextKeys             int       `json:"contextKeys"`
	SavedAt                 time.Time `json:"savedAt"`
	// Error is why a stored value does not decode ("" when it does).
	Error string `json:"error,omitempty"`
}
