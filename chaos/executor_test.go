//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/executor"
	"github.com/redstate/redstate/executor/redisstate"
	"github.com/redstate/redstate/internal/keyspace"
)

// Executor load: checkpoint writers keep saving the checkpoints of their own tasks (each Put
// moves the stage index up by one, a compare-and-set on the version) and create writers save
// the first checkpoint of new tasks, each once, so a checkpoint created in the replication-lag
// window and lost shows as missing. Tenant lock contenders and the stage runner are in
// executor_lock_test.go and executor_run_test.go. The executor's keys carry no hash tag (its
// namespace may not), so on Cluster the task and tenant ids are picked so that the keys the
// load checks live on the shard the faults hit.
const (
	ckptWriters       = 2
	ckptTasksPerWrite = 10
	ckptCreateWriters = 2
	ckptPause         = 5 * time.Millisecond
)

// executorBlock is the executor's state layer (checkpoints, tenant locks) and its stage runner
// under load, on one namespace per run.
var executorBlock = block{name: "executor", setup: func(t *testing.T, r *run) func(int) load {
	keys := executor.MustKeys(redstate.Prefix("", fmt.Sprintf("chaos-exec-%s-%s-%d", r.topo.name(), r.mode, time.Now().UnixNano())))
	o := redisstate.Options{Keys: keys}
	ck, err := redisstate.NewCheckpoints(r.rdb, o)
	if err != nil {
		t.Fatalf("redisstate.NewCheckpoints: %v", err)
	}
	locks, err := redisstate.NewLocks(r.rdb, o)
	if err != nil {
		t.Fatalf("redisstate.NewLocks: %v", err)
	}
	runs := newStageRuns(t, r, o)
	return func(phase int) load {
		return &executorLoad{
			ckpt:  newCheckpointLoad(r, keys, ck, phase),
			locks: newLockLoad(r, keys, locks, phase),
			runs:  runs.newPhase(r, keys, phase),
		}
	}
}}

// executorLoad is one phase of the executor block.
type executorLoad struct {
	ckpt  *checkpointLoad
	locks *lockLoad
	runs  *stagePhase
}

// start runs the checkpoint writers, the lock contenders and the task submitters on produce.
func (e *executorLoad) start(produce, _ context.Context, producers, _ *sync.WaitGroup) {
	e.ckpt.start(produce, producers)
	e.locks.start(produce, producers)
	e.runs.start(produce, producers)
}

// settle waits for the submitted tasks to finish.
func (e *executorLoad) settle(t *testing.T) { e.runs.settle(t) }

// rows reports checkpoints, locks and stage runs.
func (e *executorLoad) rows(t *testing.T, faultAt time.Time) []row {
	return append(append(e.ckpt.rows(t, faultAt), e.locks.row(t, faultAt)), e.runs.row(t, faultAt))
}

// onFaultedShard reports whether key lives where the faults hit: always on Sentinel, and on
// Cluster in the slots of shard 1 (as the run's tags are chosen).
func onFaultedShard(r *run, key string) bool {
	if r.topo.name() != "cluster" {
		return true
	}
	s := keyspace.Slot(key)
	return s >= 16384/3 && s < 2*16384/3
}

// faultedIDs returns n ids "<prefix>-<i>" whose key (by keyOf) lives where the faults hit.
func faultedIDs(r *run, prefix string, n int, keyOf func(string) string) []string {
	var ids []string
	for i := 0; len(ids) < n; i++ {
		id := fmt.Sprintf("%s-%d", prefix, i)
		if onFaultedShard(r, keyOf(id)) {
			ids = append(ids, id)
		}
	}
	return ids
}

// checkpointLoad is the checkpoint load of one phase: per task, the stage index of the last
// acknowledged Put, and the tasks whose first checkpoint was acknowledged.
type checkpointLoad struct {
	r     *run
	keys  executor.Keys
	store *redisstate.Checkpoints
	phase int
	log   opLog
	clog  opLog

	mu      sync.Mutex
	acked   map[string]int
	created []string
	// wentBack counts re-reads that found a checkpoint behind its last acknowledged Put.
	wentBack int
}

// newCheckpointLoad returns the checkpoint load of one phase on store.
func newCheckpointLoad(r *run, keys executor.Keys, store *redisstate.Checkpoints, phase int) *checkpointLoad {
	return &checkpointLoad{r: r, keys: keys, store: store, phase: phase, acked: map[string]int{}}
}

// start runs the checkpoint writers and creators until ctx ends.
func (c *checkpointLoad) start(ctx context.Context, wg *sync.WaitGroup) {
	for w := range ckptWriters {
		ids := faultedIDs(c.r, fmt.Sprintf("ckpt-p%d-w%d", c.phase, w), ckptTasksPerWrite, c.keys.Checkpoint)
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.write(ctx, ids)
		}()
	}
	for w := range ckptCreateWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.create(ctx, fmt.Sprintf("ckpt-new-p%d-w%d", c.phase, w))
		}()
	}
}

// write keeps moving the checkpoints of ids forward, one stage per Put, until ctx ends. After
// a refused compare-and-set (a failover lost the version it expected, or a Put whose reply was
// lost went through) it re-reads the stored checkpoint and goes on from there.
func (c *checkpointLoad) write(ctx context.Context, ids []string) {
	index := map[string]int{}
	version := map[string]int64{}
	for i := 0; ctx.Err() == nil; i++ {
		id := ids[i%len(ids)]
		next := index[id] + 1
		cp := executor.Checkpoint{LastCompletedStageIndex: next, ContextData: map[string]string{"writer": id}}
		opCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
		v, err := c.store.Put(opCtx, id, cp, version[id])
		cancel()
		if ctx.Err() != nil {
			return // outcome unknown
		}
		switch {
		case err == nil:
			c.log.add(nil)
			index[id], version[id] = next, v
			c.mu.Lock()
			c.acked[id] = next
			c.mu.Unlock()
		case redstate.IsCode(err, redstate.EPRECONDITION), redstate.IsCode(err, redstate.ECONFLICT):
			c.log.add(nil) // the store answered: a refused CAS is not an availability failure
			stored, v := c.reread(ctx, id)
			if stored >= 0 && stored < index[id] {
				c.mu.Lock()
				c.wentBack++
				c.mu.Unlock()
			}
			index[id], version[id] = stored, v
		default:
			c.log.add(err)
		}
		time.Sleep(ckptPause)
	}
}

// reread returns the stored stage index and version of id (-1 and 0 when missing, or when it
// cannot be read: the next Put then fails its CAS and reads again).
func (c *checkpointLoad) reread(ctx context.Context, id string) (int, int64) {
	opCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	cp, err := c.store.Get(opCtx, id)
	if err != nil {
		return -1, 0
	}
	return cp.LastCompletedStageIndex, cp.Version
}

// create saves the first checkpoint of a new task per call until ctx ends.
func (c *checkpointLoad) create(ctx context.Context, prefix string) {
	for i := 0; ctx.Err() == nil; i++ {
		id := fmt.Sprintf("%s-%d", prefix, i)
		if !onFaultedShard(c.r, c.keys.Checkpoint(id)) {
			continue
		}
		opCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
		_, err := c.store.Put(opCtx, id, executor.Checkpoint{LastCompletedStageIndex: 0}, 0)
		cancel()
		if ctx.Err() != nil {
			return // outcome unknown
		}
		c.clog.add(err)
		if err == nil {
			c.mu.Lock()
			c.created = append(c.created, id)
			c.mu.Unlock()
		}
		time.Sleep(ckptPause)
	}
}

// rows checks every acknowledged checkpoint: missing is lost; behind its last acknowledged Put,
// at the end or at a re-read during the phase, is stale.
func (c *checkpointLoad) rows(t *testing.T, faultAt time.Time) []row {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := newRow("executor checkpoint")
	s.acked, s.failed = c.log.counts()
	s.lost, s.stale = 0, c.wentBack
	for id, want := range c.acked {
		switch got := c.readIndex(t, id); {
		case got < 0:
			s.lost++
		case got < want:
			s.stale++
		}
	}
	s.recovery = recovered(t, &c.log, faultAt, s.block)
	n := newRow("executor checkpoint new")
	n.acked, n.failed = c.clog.counts()
	for _, id := range c.created {
		if c.readIndex(t, id) < 0 {
			n.lost++
		}
	}
	n.recovery = recovered(t, &c.clog, faultAt, n.block)
	return []row{s, n}
}

// readIndex returns the stored stage index of id (-1 when missing), retrying unavailable
// errors for a while.
func (c *checkpointLoad) readIndex(t *testing.T, id string) int {
	t.Helper()
	deadline := time.Now().Add(failoverTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		cp, err := c.store.Get(ctx, id)
		cancel()
		switch {
		case err == nil:
			return cp.LastCompletedStageIndex
		case redstate.IsCode(err, redstate.ENOTFOUND):
			return -1
		case time.Now().After(deadline):
			t.Fatalf("read back checkpoint %s: still failing after %v: %v", id, failoverTimeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
