package redisstate

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/executor"
	"github.com/redstate/redstate/internal/lease"
	"github.com/redstate/redstate/internal/resend"
	"github.com/redstate/redstate/redisconn"
)

var _ executor.TaskRegistry = (*Registry)(nil)

// Registry is the Redis executor.TaskRegistry: task specs as JSON Strings at Keys.Spec(id)
// (TTL default executor.DefaultProjectionTTL) and the running set Keys.Running() (a Set; one
// key, so it works on Cluster).
type Registry struct {
	base
	window time.Duration // lifetime of the control inbox's call markers (resend.Window)
}

// NewRegistry returns the registry on client. Errors: EINVALID.
func NewRegistry(client redis.UniversalClient, opts Options) (*Registry, error) {
	b, err := newBase(client, opts, executor.DefaultProjectionTTL, "task registry")
	if err != nil {
		return nil, err
	}
	return &Registry{base: b, window: resend.Window(client)}, nil
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
	// The set expires DefaultProjectionTTL after the last task started (independent of the
	// store's spec TTL), so it cannot outlive every task it could name; the orphan scan removes
	// entries whose task left RUNNING.
	_, err := r.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.SAdd(ctx, r.keys.Running(), taskID)
		p.PExpire(ctx, r.keys.Running(), executor.DefaultProjectionTTL)
		return nil
	})
	return mapErr(err, "mark task running")
}

// ClearRunning implements executor.TaskRegistry.
func (r *Registry) ClearRunning(ctx context.Context, taskID string) error {
	if err := executor.ValidateID("taskId", taskID); err != nil {
		return err
	}
	_, err := r.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.SRem(ctx, r.keys.Running(), taskID)
		p.HDel(ctx, r.keys.Owners(), taskID)
		return nil
	})
	return mapErr(err, "clear running task")
}

// SetOwner implements executor.TaskRegistry: HSET on Keys.Owners.
func (r *Registry) SetOwner(ctx context.Context, taskID, instance string) error {
	if err := executor.ValidateID("taskId", taskID); err != nil {
		return err
	}
	if err := executor.ValidateID("instance", instance); err != nil {
		return err
	}
	return mapErr(r.client.HSet(ctx, r.keys.Owners(), taskID, instance).Err(), "set task owner")
}

// Owner implements executor.TaskRegistry: HGET on Keys.Owners.
func (r *Registry) Owner(ctx context.Context, taskID string) (string, error) {
	if err := executor.ValidateID("taskId", taskID); err != nil {
		return "", err
	}
	v, err := r.client.HGet(ctx, r.keys.Owners(), taskID).Result()
	if err == redis.Nil {
		return "", nil
	}
	return v, mapErr(err, "get task owner")
}

// Heartbeat implements executor.TaskRegistry: SET Keys.Alive(instance) PX ttl.
func (r *Registry) Heartbeat(ctx context.Context, instance string, ttl time.Duration) error {
	if err := executor.ValidateID("instance", instance); err != nil {
		return err
	}
	if ttl < time.Millisecond {
		return redstate.Errorf(redstate.EINVALID, "liveness ttl must be at least 1ms, got %s", ttl)
	}
	return mapErr(r.client.Set(ctx, r.keys.Alive(instance), "1", ttl).Err(), "instance heartbeat")
}

// Alive implements executor.TaskRegistry: EXISTS Keys.Alive(instance).
func (r *Registry) Alive(ctx context.Context, instance string) (bool, error) {
	if err := executor.ValidateID("instance", instance); err != nil {
		return false, err
	}
	n, err := r.client.Exists(ctx, r.keys.Alive(instance)).Result()
	if err != nil {
		return false, mapErr(err, "instance alive")
	}
	return n == 1, nil
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
	if err := redisconn.ForEachMaster(ctx, in.client, scanNode); err != nil {
		return executor.StateStats{}, mapErr(err, "inspect executor keys")
	}
	return st, nil
}

// ClaimIDs implements executor.TaskRegistry: one pipelined SET NX PX GET per id (the ids live
// in different slots on Cluster, so no single script can hold them): a key that already holds
// this call's token was set by a first copy of the pipeline that go-redis sent again, and is
// this call's own. Then, if any id was taken,
// a rollback of the ones this call took (token-checked). All or none persists; a concurrent
// claimer may see a rolled-back id as taken for that instant and get ECONFLICT too.
func (r *Registry) ClaimIDs(ctx context.Context, planID string, taskIDs []string) error {
	if err := executor.ValidateID("planId", planID); err != nil {
		return err
	}
	keys := []string{r.keys.ClaimPlan(planID)}
	kinds := []string{"plan"}
	ids := []string{planID}
	for _, id := range taskIDs {
		if err := executor.ValidateID("taskId", id); err != nil {
			return err
		}
		if slices.Contains(ids[1:], id) {
			return executor.ClaimConflict("task", id)
		}
		keys, kinds, ids = append(keys, r.keys.ClaimTask(id)), append(kinds, "task"), append(ids, id)
	}
	token := uuid.NewString()
	cmds := make([]*redis.StatusCmd, len(keys))
	// Each command carries its own outcome (the pipeline's error is the first of them, and a
	// SET … GET that set a new key answers nil).
	_, _ = r.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			cmds[i] = p.SetArgs(ctx, k, token, redis.SetArgs{Mode: "NX", Get: true, TTL: r.ttl})
		}
		return nil
	})
	var err error
	conflict := -1
	var taken []string
	for i, c := range cmds {
		old, cerr := c.Result()
		switch {
		case cerr == redis.Nil || cerr == nil && old == token:
			// Set now, or by a first copy of this pipeline that go-redis sent again.
			taken = append(taken, keys[i])
		case cerr != nil:
			if err == nil {
				err = cerr
			}
		case conflict < 0:
			conflict = i
		}
	}
	if err == nil && conflict < 0 {
		return nil
	}
	for _, k := range taken {
		// Token-checked (lease.DeleteIf), so a rollback never removes another claimer's key.
		// Best effort: a claim left behind by a failed rollback only expires with its TTL.
		_, _ = lease.DeleteIf(context.WithoutCancel(ctx), r.client, k, token)
	}
	if conflict >= 0 {
		return executor.ClaimConflict(kinds[conflict], ids[conflict])
	}
	return mapErr(err, "claim plan and task ids")
}

// SendControl implements executor.TaskRegistry: sendControlScript (RPUSH and PEXPIRE on
// Keys.Control), once per call.
func (r *Registry) SendControl(ctx context.Context, instance string, cmd executor.ControlCommand) error {
	if err := executor.ValidateControl(instance, cmd); err != nil {
		return err
	}
	b, err := json.Marshal(cmd)
	if err != nil {
		return redstate.Wrap(redstate.EINTERNAL, err, "encode control command")
	}
	key := r.keys.Control(instance)
	m := resend.NewMarker(r.keys.Namespace()+":once:", key, r.window)
	err = sendControlScript.Run(ctx, r.client, m.Keys(key), m.Args(string(b), executor.ControlTTL.Milliseconds())...).Err()
	return mapErr(err, "send control command")
}

// TakeControls implements executor.TaskRegistry: takeControlsScript (LRANGE and DEL on
// Keys.Control), once per call, so that a copy go-redis sends again returns the commands.
func (r *Registry) TakeControls(ctx context.Context, instance string) ([]executor.ControlCommand, error) {
	if err := executor.ValidateID("instance", instance); err != nil {
		return nil, err
	}
	key := r.keys.Control(instance)
	m := resend.NewMarker(r.keys.Namespace()+":once:", key, r.window)
	raws, err := takeControlsScript.Run(ctx, r.client, m.Keys(key), m.Args()...).StringSlice()
	if err != nil {
		return nil, mapErr(err, "take control commands")
	}
	var out []executor.ControlCommand
	for _, raw := range raws {
		var cmd executor.ControlCommand
		if json.Unmarshal([]byte(raw), &cmd) == nil {
			out = append(out, cmd)
		}
	}
	return out, nil
}
