package redisstate

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/executor"
)

var _ executor.TaskRegistry = (*Registry)(nil)

// Registry is the Redis executor.TaskRegistry: task specs as JSON Strings at Keys.Spec(id)
// (TTL default executor.DefaultProjectionTTL) and the running set Keys.Running() (a Set; one
// key, so it works on Cluster).
type Registry struct{ base }

// NewRegistry returns the registry on client. Errors: EINVALID.
func NewRegistry(client redis.UniversalClient, opts Options) (*Registry, error) {
	b, err := newBase(client, opts, executor.DefaultProjectionTTL, "task registry")
	if err != nil {
		return nil, err
	}
	return &Registry{b}, nil
}

// PutSpec implements executor.TaskRegistry.
func (r *Registry) PutSpec(ctx context.Context, spec executor.TaskSpec) error {
	if err := executor.ValidateSpec(spec); err != nil {
		return err
	}
	b, err := executor.EncodeSpec(spec)
	if err != nil {
		return err
	}
	return mapErr(r.client.Set(ctx, r.keys.Spec(spec.TaskID), b, r.ttl).Err(), "put task spec")
}

// GetSpec implements executor.TaskRegistry.
func (r *Registry) GetSpec(ctx context.Context, taskID string) (executor.TaskSpec, error) {
	if err := executor.ValidateID("taskId", taskID); err != nil {
		return executor.TaskSpec{}, err
	}
	b, err := r.client.Get(ctx, r.keys.Spec(taskID)).Bytes()
	if err == redis.Nil {
		return executor.TaskSpec{}, redstate.Errorf(redstate.ENOTFOUND, "task spec %s not found", taskID)
	}
	if err != nil {
		return executor.TaskSpec{}, mapErr(err, "get task spec")
	}
	return executor.DecodeSpec(b)
}

// MarkRunning implements executor.TaskRegistry.
func (r *Registry) MarkRunning(ctx context.Context, taskID string) error {
	if err := executor.ValidateID("taskId", taskID); err != nil {
		return err
	}
	return mapErr(r.client.SAdd(ctx, r.keys.Running(), taskID).Err(), "mark task running")
}

// ClearRunning implements executor.TaskRegistry.
func (r *Registry) ClearRunning(ctx context.Context, taskID string) error {
	if err := executor.ValidateID("taskId", taskID); err != nil {
		return err
	}
	return mapErr(r.client.SRem(ctx, r.keys.Running(), taskID).Err(), "clear running task")
}

// RunningTasks implements executor.TaskRegistry.
func (r *Registry) RunningTasks(ctx context.Context) ([]string, error) {
	ids, err := r.client.SMembers(ctx, r.keys.Running()).Result()
	if err != nil {
		return nil, mapErr(err, "list running tasks")
	}
	slices.Sort(ids)
	return ids, nil
}

// Inspector is the Redis executor.Inspector: it SCANs each key type (on every master of a
// Cluster) and reads the holder of every lock. Meant for a periodic monitoring pass, not for
// request paths.
type Inspector struct{ base }

// NewInspector returns the inspector on client. Errors: EINVALID.
func NewInspector(client redis.UniversalClient, opts Options) (*Inspector, error) {
	b, err := newBase(client, opts, executor.DefaultProjectionTTL, "inspector")
	if err != nil {
		return nil, err
	}
	return &Inspector{b}, nil
}

// Inspect implements executor.Inspector.
func (in *Inspector) Inspect(ctx context.Context) (executor.StateStats, error) {
	st := executor.StateStats{Keys: map[string]int64{}, Locks: map[string]string{}}
	var mu sync.Mutex
	kinds := map[string]string{"ckpt": "ckpt", "task": "task", "plan": "plan", "index": "index:tenant", "lock": "lock:tenant", "spec": "spec"}
	lockPrefix := in.keys.TenantLock("")
	scanNode := func(ctx context.Context, c redis.Cmdable) error {
		for name, kind := range kinds {
			var n int64
			it := c.Scan(ctx, 0, in.keys.Pattern(kind), 1000).Iterator()
			for it.Next(ctx) {
				n++
				if name == "lock" {
					v, err := c.Get(ctx, it.Val()).Result()
					if err == nil {
						owner, _, _ := strings.Cut(v, "#")
						mu.Lock()
						st.Locks[strings.TrimPrefix(it.Val(), lockPrefix)] = owner
						mu.Unlock()
					}
				}
			}
			if err := it.Err(); err != nil {
				return err
			}
			mu.Lock()
			st.Keys[name] += n
			mu.Unlock()
		}
		return nil
	}
	var err error
	if cc, ok := in.client.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return scanNode(ctx, c) })
	} else {
		err = scanNode(ctx, in.client)
	}
	if err != nil {
		return executor.StateStats{}, mapErr(err, "inspect executor keys")
	}
	return st, nil
}
