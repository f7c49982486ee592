package redisstate

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/executor"
	"github.com/redstate/redstate/internal/lease"
)

var _ executor.TenantIndex = (*TenantIndex)(nil)

// TenantIndex is the Redis executor.TenantIndex: the String Keys.TenantIndex(tenant) holding
// the task id, with a PX TTL.
type TenantIndex struct{ base }

// NewTenantIndex returns the index on client (TTL default executor.DefaultProjectionTTL).
// Errors: EINVALID.
func NewTenantIndex(client redis.UniversalClient, opts Options) (*TenantIndex, error) {
	b, err := newBase(client, opts, executor.DefaultProjectionTTL, "tenant index")
	if err != nil {
		return nil, err
	}
	return &TenantIndex{b}, nil
}

func checkPair(tenantID, taskID string) error {
	if err := executor.ValidateID("tenantId", tenantID); err != nil {
		return err
	}
	return executor.ValidateID("taskId", taskID)
}

// Set implements executor.TenantIndex.
func (x *TenantIndex) Set(ctx context.Context, tenantID, taskID string) error {
	if err := checkPair(tenantID, taskID); err != nil {
		return err
	}
	return mapErr(x.client.Set(ctx, x.keys.TenantIndex(tenantID), taskID, x.ttl).Err(), "set tenant index")
}

// Get implements executor.TenantIndex.
func (x *TenantIndex) Get(ctx context.Context, tenantID string) (string, error) {
	if err := executor.ValidateID("tenantId", tenantID); err != nil {
		return "", err
	}
	v, err := x.client.Get(ctx, x.keys.TenantIndex(tenantID)).Result()
	if err == redis.Nil {
		return "", redstate.Errorf(redstate.ENOTFOUND, "no task indexed for tenant %s", tenantID)
	}
	return v, mapErr(err, "get tenant index")
}

// Delete implements executor.TenantIndex: the compare-and-delete of leases (lease.DeleteIf), so
// that an entry naming another task is kept.
func (x *TenantIndex) Delete(ctx context.Context, tenantID, taskID string) (bool, error) {
	if err := checkPair(tenantID, taskID); err != nil {
		return false, err
	}
	deleted, err := lease.DeleteIf(ctx, x.client, x.keys.TenantIndex(tenantID), taskID)
	return deleted, mapErr(err, "delete tenant index")
}
