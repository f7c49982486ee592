package memstate

import (
	"context"
	"sync"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/executor"
)

var _ executor.CheckpointStore = (*Checkpoints)(nil)

// Checkpoints is the memory executor.CheckpointStore. Safe for concurrent use.
type Checkpoints struct {
	opts   Options
	mu     sync.Mutex
	m      map[string]entry[executor.Checkpoint]
	last   int64 // highest version ever issued
	writes int
}

// NewCheckpoints returns an empty store (TTL default executor.DefaultCheckpointTTL).
func NewCheckpoints(opts Options) *Checkpoints {
	return &Checkpoints{opts: opts.withDefaults(executor.DefaultCheckpointTTL), m: map[string]entry[executor.Checkpoint]{}}
}

// Put implements executor.CheckpointStore.
func (s *Checkpoints) Put(_ context.Context, taskID string, cp executor.Checkpoint, expectedVersion int64) (int64, error) {
	if err := executor.ValidateID("taskId", taskID); err != nil {
		return 0, err
	}
	if err := executor.ValidateCheckpoint(cp); err != nil {
		return 0, err
	}
	if expectedVersion < 0 {
		return 0, redstate.Errorf(redstate.EINVALID, "expected version must be >= 0")
	}
	now := s.opts.Now()
	cp = executor.StampSavedAt(cp.Clone(), now)
	if _, err := executor.EncodeCheckpointBody(cp); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.m[taskID]
	if ok && cur.expired(now) {
		delete(s.m, taskID)
		ok = false
	}
	var curVersion int64
	if ok {
		curVersion = cur.val.Version
	}
	if curVersion != expectedVersion {
		return 0, redstate.Errorf(redstate.EPRECONDITION, "checkpoint of %s is at version %d, not %d", taskID, curVersion, expectedVersion)
	}
	if ok && cp.LastCompletedStageIndex < cur.val.LastCompletedStageIndex {
		return 0, redstate.Errorf(redstate.ECONFLICT, "checkpoint of %s would move lastCompletedStageIndex back from %d to %d",
			taskID, cur.val.LastCompletedStageIndex, cp.LastCompletedStageIndex)
	}
	if ok {
		cp.Version = curVersion + 1
	} else {
		// Like the Redis backend: a new checkpoint starts at the clock in microseconds.
		cp.Version = max(now.UnixMicro(), 1)
	}
	cp.Version = max(cp.Version, s.last+1)
	s.last = cp.Version
	s.m[taskID] = entry[executor.Checkpoint]{val: cp, expires: now.Add(s.opts.TTL)}
	if s.writes++; s.writes%sweepEvery == 0 {
		sweep(s.m, now)
	}
	return cp.Version, nil
}

// Get implements executor.CheckpointStore.
func (s *Checkpoints) Get(_ context.Context, taskID string) (executor.Checkpoint, error) {
	if err := executor.ValidateID("taskId", taskID); err != nil {
		return executor.Checkpoint{}, err
	}
	now := s.opts.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[taskID]
	if ok && e.expired(now) {
		delete(s.m, taskID)
		ok = false
	}
	if !ok {
		return executor.Checkpoint{}, redstate.Errorf(redstate.ENOTFOUND, "no checkpoint for task %s", taskID)
	}
	return e.val.Clone(), nil
}

// Remove implements executor.CheckpointStore.
func (s *Checkpoints) Remove(_ context.Context, taskID string) error {
	if err := executor.ValidateID("taskId", taskID); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, taskID)
	return nil
}
