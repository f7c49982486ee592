package queuebench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate/bench"
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
	}
	got := rep.ResultLines()
	want := []string{
		"RESULT queue.throughput ours=25000 baseline=16667 ratio=1.50",
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

	var table bytes.Buffer
	if err := PrintTable(&table, rep); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"phase", "enqueue", "process", "asynq", "0.990", "25000"} {
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
	lines := rep.ResultLines()
	if !strings.HasPrefix(lines[0], "RESULT queue.throughput ours=") || !strings.HasPrefix(lines[1], "RESULT queue.enqueue ours=") {
		t.Errorf("RESULT lines %q", lines)
	}
	if keys := client.Keys(context.Background(), "*").Val(); len(keys) != 0 {
		t.Errorf("keys left after cleanup: %q", keys)
	}
	out := progress.String()
	if strings.Count(out, "cleanup: unlinked") != 2 {
		t.Errorf("progress lacks the two cleanup lines:\n%s", out)
	}
	if strings.Contains(out, "level=ERROR") || strings.Contains(out, "asynq ERROR") {
		t.Errorf("errors were logged:\n%s", out)
	}
}
