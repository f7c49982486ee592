package queuebench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/bench"
	"github.com/redstate/redstate/redisconn"
	"github.com/redstate/redstate/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func TestResultLines_Format(t *testing.T) {
	lat := make([]time.Duration, 100)
	for i := range lat {
		lat[i] = time.Duration(i+1) * 10 * time.Microsecond // p99 = 0.99 ms
	}
	rep := &Report{
		Enqueue: bench.Comparison{Name: enqueueName,
			Ours:     &bench.Result{Ops: 30000, Elapsed: time.Second, Latencies: lat},
			Baseline: &bench.Result{Ops: 20000, Elapsed: time.Second, Latencies: lat[:10]}},
		Throughput: bench.Comparison{Name: throughputName,
			Ours:     &bench.Result{Ops: 100000, Elapsed: 4 * time.Second},
			Baseline: &bench.Result{Ops: 100000, Elapsed: 6 * time.Second}},
		OursProcess: bench.SideCost{CPU: 400 * time.Millisecond, ClientCPU: time.Second,
			Commands: redisconn.CommandStats{"evalsha": {Calls: 20000, Usec: 300000}, "lmove": {Calls: 100000, Usec: 100000}}},
		BaselineProcess: bench.SideCost{CPU: 1200 * time.Millisecond, ClientCPU: 1500 * time.Millisecond,
			Commands: redisconn.CommandStats{"evalsha": {Calls: 200000, Usec: 900000}}},
	}
	got := rep.ResultLines()
	want := []string{
		"RESULT queue.throughput ours=25000 baseline=16667 ratio=1.50",
		"RESULT queue.process_cost redis_cpu_us=4.00 baseline_redis_cpu_us=12.00 redis_us=3.00 baseline_redis_us=9.00 client_cpu_us=10.00 baseline_client_cpu_us=15.00",
		"RESULT queue.enqueue ours=30000 baseline=20000 ratio=1.50 p99_ms=0.990",
	}
	if len(got) != len(want) {
		t.Fatalf("got %d lines, want %d: %q", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d:\n got %q\nwant %q", i, got[i], want[i])
		}
	}

	// A baseline that did nothing gives ratio 0, not Inf/NaN.
	zero := bench.Comparison{Name: throughputName, Ours: &bench.Result{Ops: 5, Elapsed: time.Second}, Baseline: &bench.Result{}}
	if l := ThroughputLine(zero); l != "RESULT queue.throughput ours=5 baseline=0 ratio=0.00" {
		t.Errorf("zero baseline: %q", l)
	}

	// The option cases append their lines, with the server µs per enqueue from commandstats
	// (the scripts' time only, when scripts ran).
	rep.Delayed = &OptionEnqueue{
		Comparison: bench.Comparison{Name: delayedName,
			Ours:     &bench.Result{Ops: 40000, Elapsed: time.Second, Latencies: lat},
			Baseline: &bench.Result{Ops: 20000, Elapsed: time.Second}},
		OursRedis:     redisconn.CommandStats{"evalsha": {Calls: 40000, Usec: 400000}, "zadd": {Calls: 80000, Usec: 160000}},
		BaselineRedis: redisconn.CommandStats{"evalsha": {Calls: 20000, Usec: 120000}, "eval": {Calls: 1, Usec: 50}, "sadd": {Calls: 1, Usec: 1}},
		OursCPU:       200 * time.Millisecond,
		BaselineCPU:   240 * time.Millisecond,
	}
	rep.Unique = &OptionEnqueue{
		Comparison: bench.Comparison{Name: uniqueName,
			Ours:     &bench.Result{Ops: 10, Elapsed: time.Second, Latencies: lat[:1]},
			Baseline: &bench.Result{Ops: 10, Elapsed: 2 * time.Second}},
		OursRedis:     redisconn.CommandStats{"lpush": {Calls: 10, Usec: 10}, "info": {Calls: 1, Usec: 5}},
		BaselineRedis: redisconn.CommandStats{},
	}
	got = rep.ResultLines()
	want = append(want,
		"RESULT queue.enqueue_delayed ours=40000 baseline=20000 ratio=2.00 p99_ms=0.990 redis_us=10.00 baseline_redis_us=6.00 redis_cpu_us=5.00 baseline_redis_cpu_us=12.00",
		"RESULT queue.enqueue_unique ours=10 baseline=5 ratio=2.00 p99_ms=0.010 redis_us=1.50 baseline_redis_us=0.00 redis_cpu_us=0.00 baseline_redis_cpu_us=0.00")
	if len(got) != len(want) {
		t.Fatalf("got %d lines, want %d: %q", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d:\n got %q\nwant %q", i, got[i], want[i])
		}
	}

	var table bytes.Buffer
	if err := PrintTable(&table, rep); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"phase", "enqueue", "process", "asynq", "0.990", "25000", "enqueue_delayed", "enqueue_unique", "40000"} {
		if !strings.Contains(table.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, table.String())
		}
	}
}

func TestRun_SmokeAgainstRealRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("needs redis-server")
	}
	srv := redistest.SharedStandalone(t)
	client := srv.Client(t)
	var progress bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Options{
		Client: client, Jobs: 200, Concurrency: 4, Clients: 3, Workers: 2, Rounds: 2,
		StallTimeout: 20 * time.Second, Progress: &progress,
	})
	if err != nil {
		t.Fatalf("%v\nprogress:\n%s", err, progress.String())
	}
	for _, c := range []bench.Comparison{rep.Enqueue, rep.Throughput} {
		for _, r := range []*bench.Result{c.Ours, c.Baseline} {
			if r.Ops != 400 || r.Errors != 0 || r.Elapsed <= 0 {
				t.Errorf("%s %s: ops %d errors %d elapsed %s, want 400 jobs (2 rounds of 200) without errors", c.Name, r.Name, r.Ops, r.Errors, r.Elapsed)
			}
		}
	}
	if n := len(rep.Enqueue.Ours.Latencies); n != 400 {
		t.Errorf("%d enqueue latencies, want 400", n)
	}
	for _, c := range []*OptionEnqueue{rep.Delayed, rep.Unique} {
		if c == nil {
			t.Fatal("an option case did not run")
		}
		for _, r := range []*bench.Result{c.Ours, c.Baseline} {
			if r.Ops != 400 || r.Errors != 0 || len(r.Latencies) != 400 {
				t.Errorf("%s %s: ops %d errors %d latencies %d, want 400 enqueues without errors", c.Name, r.Name, r.Ops, r.Errors, len(r.Latencies))
			}
		}
		// asynq sends one script call per enqueue; ours one per batch of concurrent enqueues
		// (at least one job each), and every job writes its record (one HSET each).
		if s := c.BaselineRedis; s["evalsha"].Calls+s["eval"].Calls < 400 || s.ClientUsec() <= 0 {
			t.Errorf("%s asynq: want at least 400 script calls: %s", c.Name, s)
		}
		// (EVAL only re-sends a call that met NOSCRIPT: several batches in flight may each
		// meet it once on a fresh server.)
		if s := c.OursRedis; s["evalsha"].Calls > 400 || s["hset"].Calls != 400 || s.ClientUsec() <= 0 {
			t.Errorf("%s ours: want at most 400 script calls and 400 records: %s", c.Name, s)
		}
		if c.OursCPU <= 0 || c.BaselineCPU <= 0 {
			t.Errorf("%s: server CPU ours %s, asynq %s; want both measured", c.Name, c.OursCPU, c.BaselineCPU)
		}
	}
	// Each side's drains were measured: server CPU, this process's CPU and the scripts ours
	// sends (a dequeue script serves several jobs, an ack script the acks finishing together).
	for name, c := range map[string]bench.SideCost{"ours": rep.OursProcess, "asynq": rep.BaselineProcess} {
		if c.CPU <= 0 || c.ClientCPU <= 0 || c.Commands.ClientUsec() <= 0 {
			t.Errorf("process cost of %s: server CPU %s, client CPU %s, commands %s; want all measured", name, c.CPU, c.ClientCPU, c.Commands)
		}
	}
	if s := rep.OursProcess.Commands; s["evalsha"].Calls+s["eval"].Calls > 2*400 {
		t.Errorf("ours sent more than two script calls per job while processing: %s", s)
	}
	lines := rep.ResultLines()
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "RESULT queue.throughput ours=") || !strings.HasPrefix(lines[1], "RESULT queue.process_cost redis_cpu_us=") ||
		!strings.HasPrefix(lines[2], "RESULT queue.enqueue ours=") ||
		!strings.HasPrefix(lines[3], "RESULT queue.enqueue_delayed ours=") || !strings.HasPrefix(lines[4], "RESULT queue.enqueue_unique ours=") ||
		!strings.Contains(lines[4], " redis_us=") || !strings.Contains(lines[4], " baseline_redis_us=") || !strings.Contains(lines[4], " baseline_redis_cpu_us=") {
		t.Errorf("RESULT lines %q", lines)
	}
	if keys := client.Keys(context.Background(), "*").Val(); len(keys) != 0 {
		t.Errorf("keys left after cleanup: %q", keys)
	}
	out := progress.String()
	for _, s := range []string{"delayed/ours: server CPU", "unique/asynq: server CPU", "process/ours: server CPU", "process/asynq: server CPU"} {
		if !strings.Contains(out, s) {
			t.Errorf("progress lacks %q:\n%s", s, out)
		}
	}
	if strings.Count(out, "cleanup: unlinked") != 2 {
		t.Errorf("progress lacks the two cleanup lines:\n%s", out)
	}
	if strings.Contains(out, "level=ERROR") || strings.Contains(out, "asynq ERROR") {
		t.Errorf("errors were logged:\n%s", out)
	}
}

func TestRun_UnknownCase(t *testing.T) {
	_, err := Run(context.Background(), Options{Client: redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), Cases: []string{"delayed", "bogus"}})
	if err == nil || !strings.Contains(err.Error(), `unknown case "bogus"`) {
		t.Fatalf("err = %v, want unknown case", err)
	}
}
