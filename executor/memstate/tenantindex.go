package memstate

import (
	"context"
	"sync"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/executor"
)

var _ executor.TenantIndex = (*TenantIndex)(nil)

// TenantIndex is the memory executor.TenantIndex. Safe for concurrent use.
type TenantIndex struct {
	opts   Options
	mu     sync.Mutex
	m      map[string]entry[string]
	writes int
}

// NewTenantIndex returns an empty index (TTL default executor.DefaultProjectionTTL).
func NewTenantIndex(opts Options) *TenantIndex {
	return &TenantIndex{opts: opts.withDefaults(executor.DefaultProjectionTTL), m: map[string]entry[string]{}}
}

func checkPair(tenantID, taskID string) error {
	if err := executor.ValidateID("tenantId", tenantID); err != nil {
		return err
	}
	return executor.ValidateID("taskId", taskID)
}

// Set implements executor.TenantIndex.
func (x *TenantIndex) Set(_ context.Context, tenantID, taskID string) error {
	if err := checkPair(tenantID, taskID); err != nil {
		return err
	}
	now := x.opts.Now()
	x.mu.Lock()
	defer x.mu.Unlock()
	x.m[tenantID] = entry[string]{val: taskID, expires: now.Add(x.opts.TTL)}
	if x.writes++; x.writes%sweepEvery == 0 {
		sweep(x.m, now)
	}
	return nil
}

// Get implements executor.TenantIndex.
func (x *TenantIndex) Get(_ context.Context, tenantID string) (string, error) {
	if err := executor.ValidateID("tenantId", tenantID); err != nil {
		return "", err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	e, ok := x.m[tenantID]
	if !ok || e.expired(x.opts.Now()) {
		delete(x.m, tenantID)
		return "", redstate.Errorf(redstate.ENOTFOUND, "no task indexed for tenant %s", tenantID)
	}
	return e.val, nil
}

// Delete implements executor.TenantIndex.
func (x *TenantIndex) Delete(_ context.Context, tenantID, taskID string) (bool, error) {
	if err := checkPair(tenantID, taskID); err != nil {
		return false, err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	e, ok := x.m[tenantID]
	if !ok || e.expired(x.opts.Now()) || e.val != taskID {
		return false, nil
	}
	delete(x.m, tenantID)
	return true, nil
}
