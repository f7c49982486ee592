package redisstate

import (
	"context"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/executor"
)

var _ executor.CheckpointStore = (*Checkpoints)(nil)

// Checkpoints is the Redis executor.CheckpointStore: one String per task holding the
// checkpoint JSON (version first) with a PX TTL, written by putCheckpointScript.
//
// Reads go through a local cache of decoded checkpoints keyed by version that is never stale:
//
//   - a task not in the cache costs one GET (and the decoded result is cached);
//   - a cached task costs one GETRANGE of the value's first MaxVersionPrefixLen bytes
//     (`{"version":N,`, ~30 bytes on the wire instead of the whole document): if the stored
//     version is the cached one, the cached copy is returned without decoding; if it differs
//     (another instance wrote), a GET follows, so a changed checkpoint costs two round trips;
//     if the key is gone, ENOTFOUND.
//
// Put and Remove update the cache. Versions never repeat for a task (see
// putCheckpointScript), so a version match proves the cached copy is the stored value.
type Checkpoints struct {
	base
	cacheSize int

	mu    sync.Mutex
	cache map[string]executor.Checkpoint // taskID -> decoded checkpoint (with Version)
}

// NewCheckpoints returns the checkpoint store on client (TTL default
// executor.DefaultCheckpointTTL). Errors: EINVALID.
func NewCheckpoints(client redis.UniversalClient, opts Options) (*Checkpoints, error) {
	b, err := newBase(client, opts, executor.DefaultCheckpointTTL, "checkpoint store")
	if err != nil {
		return nil, err
	}
	size := opts.CacheSize
	if size == 0 {
		size = 10000
	}
	return &Checkpoints{base: b, cacheSize: size, cache: map[string]executor.Checkpoint{}}, nil
}

// Put implements executor.CheckpointStore.
func (s *Checkpoints) Put(ctx context.Context, taskID string, cp executor.Checkpoint, expectedVersion int64) (int64, error) {
	if err := executor.ValidateID("taskId", taskID); err != nil {
		return 0, err
	}
	if err := executor.ValidateCheckpoint(cp); err != nil {
		return 0, err
	}
	if expectedVersion < 0 {
		return 0, redstate.Errorf(redstate.EINVALID, "expected version must be >= 0")
	}
	cp = executor.StampSavedAt(cp, s.now())
	body, err := executor.EncodeCheckpointBody(cp)
	if err != nil {
		return 0, err
	}
	res, err := putCheckpointScript.Run(ctx, s.client, []string{s.keys.Checkpoint(taskID)},
		expectedVersion, cp.LastCompletedStageIndex, body, ms(s.ttl)).StringSlice()
	if err != nil {
		return 0, mapErr(err, "put checkpoint")
	}
	switch {
	case len(res) == 2 && res[0] == "OK":
		v, err := strconv.ParseInt(res[1], 10, 64)
		if err != nil {
			return 0, redstate.Wrap(redstate.EINTERNAL, err, "put checkpoint: bad version reply")
		}
		cp = cp.Clone()
		cp.Version = v
		s.remember(taskID, cp)
		return v, nil
	case len(res) == 2 && res[0] == "PRECONDITION":
		return 0, redstate.Errorf(redstate.EPRECONDITION, "checkpoint of %s is at version %s, not %d", taskID, res[1], expectedVersion)
	case len(res) == 2 && res[0] == "CONFLICT":
		return 0, redstate.Errorf(redstate.ECONFLICT, "checkpoint of %s would move lastCompletedStageIndex back from %s to %d",
			taskID, res[1], cp.LastCompletedStageIndex)
	}
	return 0, redstate.Errorf(redstate.EINTERNAL, "put checkpoint of %s: stored value is not a versioned checkpoint (%v)", taskID, res)
}

// Get implements executor.CheckpointStore.
func (s *Checkpoints) Get(ctx context.Context, taskID string) (executor.Checkpoint, error) {
	if err := executor.ValidateID("taskId", taskID); err != nil {
		return executor.Checkpoint{}, err
	}
	key := s.keys.Checkpoint(taskID)
	if cached, ok := s.cached(taskID); ok {
		head, err := s.client.GetRange(ctx, key, 0, int64(executor.MaxVersionPrefixLen-1)).Bytes()
		if err != nil {
			return executor.Checkpoint{}, mapErr(err, "get checkpoint")
		}
		if len(head) == 0 {
			s.forget(taskID)
			return executor.Checkpoint{}, redstate.Errorf(redstate.ENOTFOUND, "no checkpoint for task %s", taskID)
		}
		if v, ok := executor.ParseVersionPrefix(head); ok && v == cached.Version {
			return cached.Clone(), nil
		}
	}
	raw, err := s.client.Get(ctx, key).Bytes()
	if err != nil {
		if err == redis.Nil {
			s.forget(taskID)
			return executor.Checkpoint{}, redstate.Errorf(redstate.ENOTFOUND, "no checkpoint for task %s", taskID)
		}
		return executor.Checkpoint{}, mapErr(err, "get checkpoint")
	}
	cp, err := executor.DecodeCheckpoint(raw)
	if err != nil {
		return executor.Checkpoint{}, err
	}
	s.remember(taskID, cp.Clone())
	return cp, nil
}

// Remove implements executor.CheckpointStore.
func (s *Checkpoints) Remove(ctx context.Context, taskID string) error {
	if err := executor.ValidateID("taskId", taskID); err != nil {
		return err
	}
	s.forget(taskID)
	if err := s.client.Del(ctx, s.keys.Checkpoint(taskID)).Err(); err != nil {
		return mapErr(err, "remove checkpoint")
	}
	return nil
}

func (s *Checkpoints) cached(taskID string) (executor.Checkpoint, bool) {
	if s.cacheSize < 0 {
		return executor.Checkpoint{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cp, ok := s.cache[taskID]
	return cp, ok
}

// remember caches cp unless a newer version is cached already. When the cache is full an
// arbitrary entry makes room (every entry is validated on use, so eviction only costs a GET).
func (s *Checkpoints) remember(taskID string, cp executor.Checkpoint) {
	if s.cacheSize < 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.cache[taskID]; ok && old.Version > cp.Version {
		return
	} else if !ok && len(s.cache) >= s.cacheSize {
		for k := range s.cache {
			delete(s.cache, k)
			break
		}
	}
	s.cache[taskID] = cp
}

func (s *Checkpoints) forget(taskID string) {
	if s.cacheSize < 0 {
		return
	}
	s.mu.Lock()
	delete(s.cache, taskID)
	s.mu.Unlock()
}
