package bench

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestPercentile_NearestRank(t *testing.T) {
	var s []time.Duration
	for i := 1; i <= 1000; i++ {
		s = append(s, time.Duration(i)*time.Microsecond)
	}
	for _, tc := range []struct {
		p    float64
		want time.Duration
	}{
		{50, 500 * time.Microsecond},
		{99, 990 * time.Microsecond},
		{99.9, 999 * time.Microsecond},
		{100, 1000 * time.Microsecond},
		{0.01, 1 * time.Microsecond},
	} {
		if got := Percentile(s, tc.p); got != tc.want {
			t.Errorf("p%v = %s, want %s", tc.p, got, tc.want)
		}
	}
	if got := Percentile(nil, 99); got != 0 {
		t.Errorf("p99 of nothing = %s", got)
	}
	if got := Percentile([]time.Duration{7}, 99.9); got != 7 {
		t.Errorf("p99.9 of one value = %s", got)
	}
}

func TestResultLine_Format(t *testing.T) {
	ours := &Result{Ops: 95000, Elapsed: 10 * time.Second, Latencies: []time.Duration{100 * time.Microsecond, 1234567 * time.Nanosecond}}
	raw := &Result{Ops: 100000, Elapsed: 10 * time.Second, Latencies: []time.Duration{90 * time.Microsecond, 1100 * time.Microsecond}}
	got := ResultLine(Comparison{Name: "buildstatus.get", Ours: ours, Baseline: raw})
	want := "RESULT buildstatus.get ours=9500 baseline=10000 ratio=0.95 p99_ms=1.235 baseline_p99_ms=1.100"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	var tbl bytes.Buffer
	if err := PrintTable(&tbl, []Comparison{{Name: "buildstatus.get", Ours: ours, Baseline: raw}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tbl.String(), "p99_ms") || strings.Count(tbl.String(), "buildstatus.get") != 2 {
		t.Fatalf("table:\n%s", tbl.String())
	}
}

func TestRun_OpsCountAndErrors(t *testing.T) {
	var calls atomic.Int64
	boom := errors.New("boom")
	r := Run(context.Background(), "x", Config{Clients: 4, Ops: 1000}, func(context.Context, int, int64) error {
		if calls.Add(1)%10 == 0 {
			return boom
		}
		return nil
	})
	if calls.Load() != 1000 || r.Ops+r.Errors != 1000 || r.Errors != 100 || !errors.Is(r.FirstErr, boom) {
		t.Fatalf("calls=%d ops=%d errors=%d first=%v", calls.Load(), r.Ops, r.Errors, r.FirstErr)
	}
	if len(r.Latencies) != int(r.Ops) {
		t.Fatalf("%d latencies for %d ops", len(r.Latencies), r.Ops)
	}
}

func TestRunPair_AlternatesAndSplitsTime(t *testing.T) {
	var order []string
	op := func(name string) Op {
		return func(_ context.Context, _ int, i int64) error {
			if i == 0 {
				order = append(order, name) // one client, runs in sequence: no race
			}
			time.Sleep(time.Millisecond)
			return nil
		}
	}
	a, b := RunPair(context.Background(), "a", "b", Config{Clients: 1, Duration: 200 * time.Millisecond}, op("a"), op("b"))
	if strings.Join(order, "") != "abba" {
		t.Fatalf("order = %v, want a b b a", order)
	}
	for _, r := range []*Result{a, b} {
		if r.Elapsed < 190*time.Millisecond || r.Elapsed > 300*time.Millisecond || r.Ops == 0 {
			t.Errorf("%s: elapsed %s ops %d, want about 200ms", r.Name, r.Elapsed, r.Ops)
		}
	}
}
