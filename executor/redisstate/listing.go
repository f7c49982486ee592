package redisstate

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/executor"
	"github.com/redstate/redstate/internal/keyspace"
	"github.com/redstate/redstate/redisconn"
)

// Lister reads the executor's whole state for operators (`redstate executor plans|tasks|locks|
// checkpoints`): it SCANs one key type (on every master of a Cluster) and reads each entry.
// Meant for admin commands, not request paths. Results are sorted by id.
type Lister struct {
	base
	projections *Projections
}

// NewLister returns the lister on client. Errors: EINVALID.
func NewLister(client redis.UniversalClient, opts Options) (*Lister, error) {
	b, err := newBase(client, opts, executor.DefaultProjectionTTL, "lister")
	if err != nil {
		return nil, err
	}
	return &Lister{base: b, projections: &Projections{b}}, nil
}

// ids returns the sorted ids of every key that starts with prefix (a key of Keys with an
// empty id), SCANning every master.
func (l *Lister) ids(ctx context.Context, prefix string) ([]string, error) {
	var mu sync.Mutex
	var ids []string
	pattern := keyspace.GlobEscape(prefix) + "*"
	err := redisconn.ScanMasters(ctx, l.client, pattern, func(_ context.Context, _ redis.Cmdable, keys []string) error {
		mu.Lock()
		defer mu.Unlock()
		for _, k := range keys {
			ids = append(ids, strings.TrimPrefix(k, prefix))
		}
		return nil
	})
	if err != nil {
		return nil, mapErr(err, "scan executor keys")
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

// valid drops ids that are not valid executor ids (keys of another kind sharing the prefix).
func valid(ids []string) []string {
	return slices.DeleteFunc(ids, func(id string) bool { return executor.ValidateID("id", id) != nil })
}

// Plans returns every plan projection.
func (l *Lister) Plans(ctx context.Context) ([]executor.PlanProjection, error) {
	ids, err := l.ids(ctx, l.keys.Plan(""))
	if err != nil {
		return nil, err
	}
	out := []executor.PlanProjection{}
	for _, id := range valid(ids) {
		p, err := l.projections.GetPlan(ctx, id)
		if redstate.IsCode(err, redstate.ENOTFOUND) {
			continue // expired between SCAN and read
		}
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// TaskIDs returns the ids of every task projection.
func (l *Lister) TaskIDs(ctx context.Context) ([]string, error) {
	ids, err := l.ids(ctx, l.keys.Task(""))
	return valid(ids), err
}

// Instances returns the ids of the runner instances whose liveness key exists.
func (l *Lister) Instances(ctx context.Context) ([]string, error) {
	ids, err := l.ids(ctx, l.keys.Alive(""))
	return valid(ids), err
}

// Locks returns every held tenant lock with its holder, fence and time left.
func (l *Lister) Locks(ctx context.Context) ([]executor.LockInfo, error) {
	tenants, err := l.ids(ctx, l.keys.TenantLock(""))
	if err != nil {
		return nil, err
	}
	out := []executor.LockInfo{}
	for _, tenant := range valid(tenants) {
		var token, fence *redis.StringCmd
		var ttl *redis.DurationCmd
		// The lock and its fence share a slot (Keys.TenantFence), so one pipeline reaches one node.
		_, err := l.client.Pipelined(ctx, func(p redis.Pipeliner) error {
			token = p.Get(ctx, l.keys.TenantLock(tenant))
			ttl = p.PTTL(ctx, l.keys.TenantLock(tenant))
			fence = p.Get(ctx, l.keys.TenantFence(tenant))
			return nil
		})
		if token.Err() == redis.Nil {
			continue // released between SCAN and read
		}
		if err != nil && err != redis.Nil {
			return nil, mapErr(err, "read tenant lock")
		}
		holder, _, _ := strings.Cut(token.Val(), "#")
		n, _ := fence.Int64()
		out = append(out, executor.LockInfo{TenantID: tenant, Holder: holder, Fence: n, TimeLeftMs: max(ttl.Val().Milliseconds(), 0)})
	}
	return out, nil
}

// Checkpoints returns the header of every stored checkpoint; one that does not decode is
// listed with its Error.
func (l *Lister) Checkpoints(ctx context.Context) ([]executor.CheckpointInfo, error) {
	ids, err := l.ids(ctx, l.keys.Checkpoint(""))
	if err != nil {
		return nil, err
	}
	out := []executor.CheckpointInfo{}
	for _, id := range valid(ids) {
		raw, err := l.client.Get(ctx, l.keys.Checkpoint(id)).Bytes()
		if err == redis.Nil {
			continue
		}
		if err != nil {
			return nil, mapErr(err, "read checkpoint")
		}
		info := executor.CheckpointInfo{TaskID: id}
		cp, err := executor.DecodeCheckpoint(raw)
		if err != nil {
			info.Error = err.Error()
		} else {
			info.Version, info.LastCompletedStageIndex, info.SavedAt = cp.Version, cp.LastCompletedStageIndex, cp.SavedAt
			info.CompletedStages, info.ContextKeys = cp.CompletedStages, len(cp.ContextData)
		}
		if info.CompletedStages == nil {
			info.CompletedStages = []string{}
		}
		out = append(out, info)
	}
	return out, nil
}
