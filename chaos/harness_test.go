//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/redistest"
)

// Phase timing: load runs steadyBefore before each fault and steadyAfter after the topology
// is healthy again, before the producers stop and the acknowledged writes are checked.
const (
	steadyBefore = 2 * time.Second
	steadyAfter  = 2 * time.Second
)

// block is one building block's part of the harness.
type block struct {
	// name selects the block in $CHAOS_BLOCKS.
	name string
	// setup builds the block's stores on the run's one client, once per run, and returns
	// the constructor of one phase's load.
	setup func(t *testing.T, r *run) func(phase int) load
}

// load is one block's load model for one phase: it writes, records which writes were
// acknowledged, and after the fault checks them.
type load interface {
	// start launches the writers on produce (cancelled first, when the phase ends) and the
	// background workers (consumers, janitors, appliers) on work (cancelled after settle),
	// registering each goroutine with the matching WaitGroup.
	start(produce, work context.Context, producers, workers *sync.WaitGroup)
	// settle runs once the writers stopped and before the workers stop: it waits for queued
	// work to finish and runs the block's documented repair.
	settle(t *testing.T)
	// rows checks every acknowledged write and returns the block's result rows (without
	// topology, mode, fault and cycle, which the harness fills in).
	rows(t *testing.T, faultAt time.Time) []row
}

// blocks are the blocks under load, all at once, in every phase.
var blocks = []block{
	buildStatusBlock,
	queueBlock,
	executorBlock,
	indexBlock,
	reportBlock,
	feedBlock,
	httpBlock,
}

// run is one topology in one durability mode: the product client every block shares for
// the whole run, and what blocks need to place their keys.
type run struct {
	topo topology
	rdb  redis.UniversalClient
	// mode is "async" (replication as Redis does it), "wait1" (redis.durability.wait-replicas
	// 1) or "minrep" (the servers' min-replicas-to-write 1, min-replicas-max-lag 1).
	mode string
	// tags are hash tags whose slots the faults hit (on Cluster, slots of the target shard):
	// blocks that keep their state under one tag use one of them, so that each fault hits
	// them. tags[0] is the queue's.
	tags []string
	// promotedAt is when the current phase's fault was seen to have promoted a replica (the
	// harness's wait for the failover returned); zero for a fault that promotes none.
	promotedAt time.Time
}

// tagCount is how many tags a run offers its blocks.
const tagCount = 8

// cycles returns how many times each fault is injected per topology and mode: $CHAOS_CYCLES,
// default 1 (each run of make chaos is one sample; run it several times for more).
func cycles(t *testing.T) int {
	v := os.Getenv("CHAOS_CYCLES")
	if v == "" {
		return 1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("CHAOS_CYCLES=%q: want a positive integer", v)
	}
	return n
}

// selected reports whether name is in the comma-separated list $env (every name when unset).
func selected(env, name string) bool {
	v := os.Getenv(env)
	return v == "" || slices.Contains(strings.Split(v, ","), name)
}

// row is one line of the result table: one block (or one of its operations) under one fault
// of one cycle. Counters that do not apply to the block are -1 (printed "–").
type row struct {
	block, topo, mode, fault string
	cycle                    int
	acked, failed            int
	lost                     int
	// stale counts acknowledged values found older than the last acknowledged one.
	stale int
	// dups counts work done more than once (allowed by at-least-once); concurrent counts
	// runs that overlapped another run of the same work.
	dups, concurrent int
	// fences counts fencing violations: a fence handed out that was not above every fence
	// handed out before for the same lock.
	fences int
	// diffs counts differences from the source of truth after the documented repair.
	diffs int
	// stuck counts work acknowledged and still present that did not finish within the
	// block's drain (a liveness failure, not a loss).
	stuck    int
	recovery time.Duration
	// promoted is how long after the fault the harness saw a replica promoted (-1: no
	// promotion, or not measured by the block).
	promoted time.Duration
	// warnLines and errorLines count the lines a block's own process (serve) logged at Warn
	// and above, and at Error, from the fault to the end of the phase (-1: no process).
	warnLines, errorLines int
}

// newRow returns a row for block with every optional counter not applicable.
func newRow(block string) row {
	return row{block: block, stale: -1, dups: -1, concurrent: -1, fences: -1, diffs: -1, stuck: -1,
		promoted: -1, warnLines: -1, errorLines: -1}
}

func TestFailover_Sentinel(t *testing.T) {
	h := redistest.StartSentinelHA(t, redistest.WithAppendOnly(false))
	var tags []string
	for i := range tagCount {
		tags = append(tags, fmt.Sprintf("chaos%d", i))
	}
	runModes(t, sentinelTopo{h}, tags)
}

func TestFailover_Cluster(t *testing.T) {
	c := redistest.StartClusterHA(t, 3, redistest.WithAppendOnly(false))
	// Faults hit the master of shard 1; the tags are chosen to live there, so that blocks
	// keeping their state under one tag meet every fault (other keys spread over all shards).
	rdb := c.Client(t)
	var tags []string
	for i := 0; len(tags) < tagCount; i++ {
		n := fmt.Sprintf("chaos%d", i)
		slot, err := rdb.ClusterKeySlot(context.Background(), "{"+n+"}").Result()
		if err != nil {
			t.Fatalf("CLUSTER KEYSLOT: %v", err)
		}
		if slot >= 16384/3 && slot < 2*16384/3 {
			tags = append(tags, n)
		}
	}
	runModes(t, clusterTopo{c: c, shard: 1}, tags)
}

// modes are the durability settings every fault runs under, in order.
var modes = []string{"async", "wait1", "minrep"}

// runModes runs the faults on topo in every mode selected by $CHAOS_MODES (all by default),
// logs the table and checks the verdicts.
func runModes(t *testing.T, topo topology, tags []string) {
	var rows []row
	for _, mode := range modes {
		if !selected("CHAOS_MODES", mode) {
			continue
		}
		r := &run{topo: topo, rdb: newClient(t, topo, mode), mode: mode, tags: tags}
		rows = append(rows, runFaults(t, r)...)
		if mode == "minrep" {
			setMinReplicas(t, topo, 0)
		}
	}
	logTable(t, rows)
	writeSummary(t, rows)
	checkVerdicts(t, rows)
}

// checkVerdicts fails the test on a broken promise: an acknowledged write lost or found stale
// while writes waited for a replica (wait1), overlapping runs of one job in wait1, a fencing
// violation in any mode, or a difference from the source of truth left after the documented
// repair in any mode. Losses in async and minrep are measurements, not failures.
func checkVerdicts(t *testing.T, rows []row) {
	t.Helper()
	for _, r := range rows {
		where := fmt.Sprintf("%s %s %s %s cycle %d", r.block, r.topo, r.mode, r.fault, r.cycle)
		if r.mode == "wait1" && (r.lost > 0 || r.stale > 0 || r.concurrent > 0) {
			t.Errorf("%s: with wait-replicas 1, %d acknowledged writes lost, %d stale, %d overlapping runs; want 0", where, r.lost, r.stale, r.concurrent)
		}
		if r.fences > 0 {
			t.Errorf("%s: %d fences not above every earlier fence", where, r.fences)
		}
		if r.diffs > 0 {
			t.Errorf("%s: %d differences from the source of truth after the repair", where, r.diffs)
		}
	}
}

// runFaults drives the load on one product client for the whole run and injects every
// selected fault cycles(t) times.
func runFaults(t *testing.T, r *run) []row {
	var phases []func(phase int) load
	for _, b := range blocks {
		if selected("CHAOS_BLOCKS", b.name) {
			phases = append(phases, b.setup(t, r))
		}
	}
	var rows []row
	phase := 0
	for cycle := 1; cycle <= cycles(t); cycle++ {
		for _, f := range faults {
			if !selected("CHAOS_FAULTS", f.name) {
				continue
			}
			phase++
			loads := make([]load, len(phases))
			for i, newLoad := range phases {
				loads[i] = newLoad(phase)
			}
			for _, row := range runPhase(t, r, loads, f, cycle) {
				row.topo, row.mode, row.fault, row.cycle = r.topo.name(), r.mode, f.name, cycle
				rows = append(rows, row)
			}
		}
	}
	return rows
}

// runPhase runs the loads, injects f, checks that the same client writes to the new master,
// stops the writers, lets the loads settle and collects their rows.
func runPhase(t *testing.T, r *run, loads []load, f fault, cycle int) []row {
	produceCtx, stopProducing := context.WithCancel(context.Background())
	workCtx, stopWorking := context.WithCancel(context.Background())
	var producers, workers sync.WaitGroup
	defer func() { // on a failed phase too
		stopProducing()
		stopWorking()
		producers.Wait()
		workers.Wait()
	}()
	if r.mode == "minrep" {
		setMinReplicas(t, r.topo, 1) // again each phase: a restarted node reads its file
	}
	for _, l := range loads {
		l.start(produceCtx, workCtx, &producers, &workers)
	}

	time.Sleep(steadyBefore)
	target := r.topo.target(t)
	faultAt := time.Now()
	t.Logf("%s %s cycle %d: %s master %s", r.topo.name(), r.mode, cycle, f.name, target.Addr)
	r.promotedAt = f.inject(t, r.topo, target)
	t.Logf("%s %s cycle %d: %s: healthy again after %v", r.topo.name(), r.mode, cycle, f.name, time.Since(faultAt).Round(time.Millisecond))
	time.Sleep(steadyAfter)
	checkNewMaster(t, r)
	stopProducing()
	producers.Wait()
	for _, l := range loads {
		l.settle(t)
	}
	stopWorking()
	workers.Wait()

	var rows []row
	for _, l := range loads {
		rows = append(rows, l.rows(t, faultAt)...)
	}
	return rows
}

// recovered returns the recovery time of a block's writes after the fault; the test fails when
// writes never succeeded again (the client did not follow the new master).
func recovered(t *testing.T, l *opLog, faultAt time.Time, block string) time.Duration {
	t.Helper()
	d, ok := l.recovery(faultAt)
	if !ok {
		l.mu.Lock()
		defer l.mu.Unlock()
		t.Fatalf("%s: no acknowledged write after the last failure (%v): the client did not reconnect", block, l.lastErr)
	}
	return d
}

// checkNewMaster writes a marker through the product client (never recreated during the run)
// and reads it directly from the node the topology now reports as master of the target data:
// the client follows the failover without a restart.
func checkNewMaster(t *testing.T, r *run) {
	t.Helper()
	key := "{" + r.tags[0] + "}:marker"
	want := strconv.FormatInt(time.Now().UnixNano(), 10)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.rdb.Set(ctx, key, want, 0).Err(); err != nil {
		t.Fatalf("marker write through the product client: %v", err)
	}
	master := redis.NewClient(&redis.Options{Addr: r.topo.target(t).Addr})
	defer func() { _ = master.Close() }()
	got, err := master.Get(ctx, key).Result()
	if err != nil || got != want {
		t.Fatalf("marker on the current master %s: %q, %v; want %q", master.Options().Addr, got, err, want)
	}
}

// logTable logs the rows as an aligned table.
func logTable(t *testing.T, rows []row) {
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-22s %-8s %-5s %-8s %5s %6s %6s %5s %5s %5s %4s %6s %5s %9s\n", "block", "topology", "mode", "fault", "cycle", "acked", "failed", "lost", "stale", "dups", "conc", "fences", "diffs", "recovery")
	for _, r := range rows {
		fmt.Fprintf(&b, "%-22s %-8s %-5s %-8s %5d %6d %6d %5d %5s %5s %4s %6s %5s %5s %9s\n", r.block, r.topo, r.mode, r.fault, r.cycle, r.acked, r.failed, r.lost, opt(r.stale), opt(r.dups), opt(r.concurrent), opt(r.fences), opt(r.diffs), opt(r.stuck), r.recovery.Round(10*time.Millisecond))
	}
	t.Log(b.String())
}

// opt prints an optional counter: "–" when it does not apply (-1).
func opt(n int) string {
	if n < 0 {
		return "–"
	}
	return strconv.Itoa(n)
}
