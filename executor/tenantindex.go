package executor

import "context"

// TenantIndex maps a tenant to its current task (Redis String
// "N:index:tenant:<tenantId>"). The executor sets it on TaskCreated and deletes it when the
// task reaches a terminal state. Implementations are safe for concurrent use.
type TenantIndex interface {
	// Set points tenantID at taskID with the store's TTL (DefaultProjectionTTL), replacing any
	// previous task. Errors: EINVALID, EUNAVAILABLE.
	Set(ctx context.Context, tenantID, taskID string) error
	// Get returns the tenant's current task. Errors: EINVALID, ENOTFOUND, EUNAVAILABLE.
	Get(ctx context.Context, tenantID string) (string, error)
	// Delete removes the entry only if it still points at taskID (atomically), so a finished
	// task never erases the entry of the tenant's next task. It reports whether it removed it.
	// Errors: EINVALID, EUNAVAILABLE.
	Delete(ctx context.Context, tenantID, taskID string) (bool, error)
}
