//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/buildstatus/redisstore"
	"github.com/redstate/redstate/queue/redisqueue"
	"github.com/redstate/redstate/redistest"
)

// Phase timing: load runs steadyBefore before each fault and steadyAfter after the topology
// is healthy again, before the producers stop and the acknowledged writes are checked.
const (
	steadyBefore = 2 * time.Second
	steadyAfter  = 2 * time.Second
)

// cycles returns how many times each fault is injected per topology: $CHAOS_CYCLES, default 2.
func cycles(t *testing.T) int {
	v := os.Getenv("CHAOS_CYCLES")
	if v == "" {
		return 2
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("CHAOS_CYCLES=%q: want a positive integer", v)
	}
	return n
}

// row is one line of the result table: one block under one fault of one cycle.
type row struct {
	block, topo, fault string
	cycle              int
	acked, failed      int
	lost               int
	// stale counts builds holding an older version than the last acknowledged one; dups counts
	// jobs that ran more than once (allowed by at-least-once); concurrent counts overlapping runs.
	stale, dups, concurrent int
	recovery                time.Duration
}

func TestFailover_Sentinel(t *testing.T) {
	h := redistest.StartSentinelHA(t, redistest.WithAppendOnly(false))
	runFaults(t, sentinelTopo{h}, "chaos:queue")
}

func TestFailover_Cluster(t *testing.T) {
	c := redistest.StartClusterHA(t, 3, redistest.WithAppendOnly(false))
	// Faults hit the master of shard 1; the queue's hash tag is chosen to live there, so that
	// both blocks meet every fault (the builds are spread over all shards).
	rdb := c.Client(t)
	name := ""
	for i := 0; name == ""; i++ {
		n := fmt.Sprintf("chaos:queue%d", i)
		slot, err := rdb.ClusterKeySlot(context.Background(), "{"+n+"}").Result()
		if err != nil {
			t.Fatalf("CLUSTER KEYSLOT: %v", err)
		}
		if slot >= 16384/3 && slot < 2*16384/3 {
			name = n
		}
	}
	runFaults(t, clusterTopo{c: c, shard: 1}, name)
}

// runFaults drives the load on topo through one product client for the whole run and injects
// every fault cycles(t) times, then logs the table.
func runFaults(t *testing.T, topo topology, queueName string) {
	rdb := newClient(t, topo)
	store := newBuildStore(t, rdb)
	broker, err := redisqueue.New(rdb, redisqueue.Options{})
	if err != nil {
		t.Fatalf("redisqueue.New: %v", err)
	}
	var rows []row
	phase := 0
	for cycle := 1; cycle <= cycles(t); cycle++ {
		for _, f := range faults {
			phase++
			rows = append(rows, runPhase(t, topo, rdb, store, broker, queueName, f, cycle, phase)...)
		}
	}
	logTable(t, rows)
}

// runPhase runs the load, injects f, checks that the same client writes to the new master,
// stops the load and counts what was lost.
func runPhase(t *testing.T, topo topology, rdb redis.UniversalClient, store *redisstore.Store, broker *redisqueue.Broker, queueName string, f fault, cycle, phase int) []row {
	builds := newBuildLoad(store)
	jobs := newQueueLoad(broker, queueName, phase)
	produceCtx, stopProducing := context.WithCancel(context.Background())
	workCtx, stopWorking := context.WithCancel(context.Background())
	var producers, workers sync.WaitGroup
	defer func() { // on a failed phase too
		stopProducing()
		stopWorking()
		producers.Wait()
		workers.Wait()
	}()
	builds.run(produceCtx, &producers)
	jobs.produce(produceCtx, &producers)
	jobs.work(workCtx, &workers)

	time.Sleep(steadyBefore)
	target := topo.target(t)
	faultAt := time.Now()
	t.Logf("%s cycle %d: %s master %s", topo.name(), cycle, f.name, target.Addr)
	f.inject(t, topo, target)
	t.Logf("%s cycle %d: %s: healthy again after %v", topo.name(), cycle, f.name, time.Since(faultAt).Round(time.Millisecond))
	time.Sleep(steadyAfter)
	checkNewMaster(t, topo, rdb, queueName)
	stopProducing()
	producers.Wait()
	jobs.drain()
	stopWorking()
	workers.Wait()

	var rows []row
	r := row{block: "buildstatus save", topo: topo.name(), fault: f.name, cycle: cycle}
	r.acked, r.failed = builds.log.counts()
	r.lost, r.stale = builds.check(t)
	r.recovery = recovered(t, &builds.log, faultAt, r.block)
	rows = append(rows, r)
	q := row{block: "queue job", topo: topo.name(), fault: f.name, cycle: cycle}
	q.acked, q.failed = jobs.log.counts()
	q.lost, q.dups, q.concurrent = jobs.result()
	q.recovery = recovered(t, &jobs.log, faultAt, q.block)
	return append(rows, q)
}

// recovered returns the recovery time of a block's writes after the fault; the test fails when
// writes never succeeded again (the client did not follow the new master).
func recovered(t *testing.T, l *opLog, faultAt time.Time, block string) time.Duration {
	t.Helper()
	d, ok := l.recovery(faultAt)
	if !ok {
		t.Fatalf("%s: no acknowledged write after the last failure: the client did not reconnect", block)
	}
	return d
}

// checkNewMaster writes a marker through the product client (never recreated during the run)
// and reads it directly from the node the topology now reports as master of the target data:
// the client follows the failover without a restart.
func checkNewMaster(t *testing.T, topo topology, rdb redis.UniversalClient, queueName string) {
	t.Helper()
	key := "{" + queueName + "}:marker"
	want := strconv.FormatInt(time.Now().UnixNano(), 10)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rdb.Set(ctx, key, want, 0).Err(); err != nil {
		t.Fatalf("marker write through the product client: %v", err)
	}
	master := redis.NewClient(&redis.Options{Addr: topo.target(t).Addr})
	defer func() { _ = master.Close() }()
	got, err := master.Get(ctx, key).Result()
	if err != nil || got != want {
		t.Fatalf("marker on the current master %s: %q, %v; want %q", master.Options().Addr, got, err, want)
	}
}

// logTable logs the rows as an aligned table.
func logTable(t *testing.T, rows []row) {
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-17s %-9s %-8s %5s %6s %6s %5s %6s %5s %4s %9s\n", "block", "topology", "fault", "cycle", "acked", "failed", "lost", "stale", "dups", "conc", "recovery")
	for _, r := range rows {
		fmt.Fprintf(&b, "%-17s %-9s %-8s %5d %6d %6d %5d %6d %5d %4d %9s\n", r.block, r.topo, r.fault, r.cycle, r.acked, r.failed, r.lost, r.stale, r.dups, r.concurrent, r.recovery.Round(10*time.Millisecond))
	}
	t.Log(b.String())
}
