package executor

import (
	"context"
	"sync"
)

// localState is where a task is in this instance's runner.
type localState int

const (
	// stateIdle: known but nothing runs it here (paused, failed, finished, or a record
	// loaded for a retry).
	stateIdle localState = iota
	// stateWaiting: a goroutine waits for a plan slot or the tenant lock.
	stateWaiting
	// stateRunning: this instance holds the tenant lock and runs stages.
	stateRunning
)

// planRun is a plan as this instance knows it.
type planRun struct {
	id      string
	sem     chan struct{} // maxConcurrency slots
	taskIDs []string
	maxConc int
}

// taskRun is a task as this instance knows it. Fields after mu are guarded by Runner.mu.
type taskRun struct {
	plan *planRun

	emitMu sync.Mutex // orders the task's events (seq, apply, hooks)
	seq    int64      // last status-event seq (guarded by emitMu)

	spec           TaskSpec
	state          localState
	status         TaskStatus
	pauseRequested bool
	cancelled      bool
	fromCheckpoint bool
	lastCompleted  int
	stageCancel    context.CancelFunc // cancels the running stage (nil when none)
	wake           chan struct{}      // closed to wake a waiting or backing-off goroutine
}

func (t *taskRun) poke() {
	select {
	case t.wake <- struct{}{}:
	default:
	}
}
