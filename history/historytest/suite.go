// Package historytest is the conformance suite of history.Store: every backend (the memory
// store, the Redis store on a standalone server and on a Cluster) must pass Run, so the
// history behaves the same wherever it lives.
package historytest

import (
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redstate/redstate/history"
)

// Clock is a settable clock for recorders, readers and stores under test. Safe for concurrent
// use.
type Clock struct{ ns atomic.Int64 }

// NewClock returns a clock at t.
func NewClock(t time.Time) *Clock {
	c := &Clock{}
	c.Set(t)
	return c
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time { return time.Unix(0, c.ns.Load()) }

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) { c.ns.Store(t.UnixNano()) }

// Add moves the clock by d.
func (c *Clock) Add(d time.Duration) { c.ns.Add(int64(d)) }

// Backend opens the stores of one backend. Each call of the returned function is another
// store on the same shared state (another instance, or the same one after a restart). The
// stores' retention follows now; a backend whose state expires by itself (Redis) keeps now
// within a minute of the real time, which Run does.
type Backend func(t *testing.T, now func() time.Time) (newStore func() history.Store)

// Run runs the conformance suite on a backend.
func Run(t *testing.T, open Backend) {
	t.Run("CountersSumAcrossInstancesAtEveryResolution", func(t *testing.T) { countersSum(t, open) })
	t.Run("GaugesAreNotMultipliedByInstances", func(t *testing.T) { gaugesLastWins(t, open) })
	t.Run("QuantilesOverEveryInstancesHistogram", func(t *testing.T) { quantiles(t, open) })
	t.Run("NullWhereNobodyRecordedZeroWhereNothingHappened", func(t *testing.T) { nullsAndZeros(t, open) })
	t.Run("ANewInstanceReadsTheOldBuckets", func(t *testing.T) { restart(t, open) })
	t.Run("ExpiredBucketsAreNotKept", func(t *testing.T) { expired(t, open) })
	t.Run("SeriesCap", func(t *testing.T) { seriesCap(t, open) })
	t.Run("LabelFiltersAndCatalog", func(t *testing.T) { labels(t, open) })
	t.Run("Usage", func(t *testing.T) { usage(t, open) })
	t.Run("WholeBucketReadsAnswerTheSame", func(t *testing.T) { wholeReads(t, open) })
}

// base is a test's starting time: the start of the current minute, so that every tier's
// bucket of base starts at base and Redis keeps what is written.
func base() time.Time { return time.Now().Truncate(time.Minute) }

// recorder returns a recorder on store with the clock.
func recorder(t *testing.T, store history.Store, c *Clock, maxSeries int) *history.Recorder {
	t.Helper()
	r, err := history.NewRecorder(history.Options{Store: store, Now: c.Now, MaxSeries: maxSeries})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func flush(t *testing.T, rs ...*history.Recorder) {
	t.Helper()
	for _, r := range rs {
		if err := r.FlushAll(t.Context()); err != nil {
			t.Fatalf("flush: %v", err)
		}
	}
}

// read reads q at the clock's time.
func read(t *testing.T, store history.Store, at time.Time, q history.Query) history.Result {
	t.Helper()
	res, err := history.NewReader(store, func() time.Time { return at }).Read(t.Context(), q)
	if err != nil {
		t.Fatalf("read %+v: %v", q, err)
	}
	return res
}

// valueAt is the value of series i of res at time sec; ok false when null or absent.
func valueAt(t *testing.T, res history.Result, i int, sec int64) (float64, bool) {
	t.Helper()
	if i >= len(res.Series) {
		t.Fatalf("series %d of %d", i, len(res.Series))
	}
	for j, at := range res.Times {
		if at == sec {
			if v := res.Series[i].Values[j]; v != nil {
				return *v, true
			}
			return 0, false
		}
	}
	t.Fatalf("time %d not in %d..%d", sec, res.Times[0], res.Times[len(res.Times)-1])
	return 0, false
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func countersSum(t *testing.T, open Backend) {
	t0 := base()
	c := NewClock(t0)
	newStore := open(t, c.Now)
	a, b := recorder(t, newStore(), c, 0), recorder(t, newStore(), c, 0)
	a.Add(history.QueueDone, 3, "q")
	b.Add(history.QueueDone, 4, "q")
	b.Add(history.BuildsEvents, 6)
	flush(t, a, b)
	sec := t0.Unix()
	at := t0.Add(2 * time.Minute)
	for _, w := range []struct {
		window string
		step   int64
	}{{"15m", 1}, {"1h", 10}, {"24h", 60}} {
		res := read(t, newStore(), at, history.Query{Metrics: []string{history.QueueDone, history.BuildsEvents}, Window: w.window})
		if len(res.Series) != 2 || res.Series[0].Labels["queue"] != "q" {
			t.Fatalf("%s: series %+v", w.window, res.Series)
		}
		if v, ok := valueAt(t, res, 0, sec); !ok || !near(v, 7/float64(w.step)) {
			t.Errorf("%s: queue.done at %d = %v %v, want %v per second (3 + 4 of two instances)", w.window, sec, v, ok, 7/float64(w.step))
		}
		if v, ok := valueAt(t, res, 1, sec); !ok || !near(v, 6*60/float64(w.step)) {
			t.Errorf("%s: builds.events = %v %v, want %v per minute", w.window, v, ok, 6*60/float64(w.step))
		}
	}
}

func gaugesLastWins(t *testing.T, open Backend) {
	t0 := base()
	c := NewClock(t0)
	newStore := open(t, c.Now)
	a, b := recorder(t, newStore(), c, 0), recorder(t, newStore(), c, 0)
	// Both instances read the same shared queue size: one read must say 5, not 10.
	a.Set(history.QueueSize, 5, "q", "pending")
	b.Set(history.QueueSize, 5, "q", "pending")
	flush(t, a, b)
	c.Add(3 * time.Second)
	b.Set(history.QueueSize, 8, "q", "pending")
	flush(t, b)
	at := t0.Add(2 * time.Minute)
	res := read(t, newStore(), at, history.Query{Metrics: []string{history.QueueSize}, Window: "15m", Labels: map[string]string{"state": "pending"}})
	if v, ok := valueAt(t, res, 0, t0.Unix()); !ok || v != 5 {
		t.Errorf("15m at t0 = %v %v, want 5", v, ok)
	}
	if v, ok := valueAt(t, res, 0, t0.Unix()+3); !ok || v != 8 {
		t.Errorf("15m at t0+3 = %v %v, want 8", v, ok)
	}
	if _, ok := valueAt(t, res, 0, t0.Unix()+1); ok {
		t.Errorf("15m at t0+1 has a value; nobody set it")
	}
	for _, w := range []string{"1h", "24h"} {
		res := read(t, newStore(), at, history.Query{Metrics: []string{history.QueueSize}, Window: w})
		if v, ok := valueAt(t, res, 0, t0.Unix()); !ok || v != 8 {
			t.Errorf("%s = %v %v, want the last value of the step, 8", w, v, ok)
		}
	}
}

func quantiles(t *testing.T, open Backend) {
	t0 := base()
	c := NewClock(t0)
	newStore := open(t, c.Now)
	a, b := recorder(t, newStore(), c, 0), recorder(t, newStore(), c, 0)
	// Per instance: 90 latencies of 4 ms (bucket (2.5 ms, 5 ms]) and 10 of 3 s ((2.5 s, 5 s]).
	for _, r := range []*history.Recorder{a, b} {
		for range 90 {
			r.Observe(history.QueueLatency, 0.004, "q")
		}
		for range 10 {
			r.Observe(history.QueueLatency, 3, "q")
		}
	}
	flush(t, a, b)
	at := t0.Add(2 * time.Minute)
	for _, w := range []string{"15m", "1h", "24h"} {
		res := read(t, newStore(), at, history.Query{Metrics: []string{"queue.latency.p50", "queue.latency.p99"}, Window: w})
		// 200 observations: rank 100 is the 100th of 180 in (0.0025, 0.005]; rank 198 the
		// 18th of 20 in (2.5, 5], linearly interpolated.
		if v, ok := valueAt(t, res, 0, t0.Unix()); !ok || !near(v, 0.0025+0.0025*100/180) {
			t.Errorf("%s p50 = %v %v, want %v", w, v, ok, 0.0025+0.0025*100/180)
		}
		if v, ok := valueAt(t, res, 1, t0.Unix()); !ok || !near(v, 2.5+2.5*18/20) {
			t.Errorf("%s p99 = %v %v, want %v", w, v, ok, 2.5+2.5*18/20)
		}
		if _, ok := valueAt(t, res, 0, t0.Unix()-60); ok {
			t.Errorf("%s p50 has a value where nothing was observed", w)
		}
	}
}

func nullsAndZeros(t *testing.T, open Backend) {
	t0 := base()
	c := NewClock(t0)
	newStore := open(t, c.Now)
	r := recorder(t, newStore(), c, 0) // recording from t0
	r.Add(history.QueueDone, 2, "q")
	flush(t, r)
	c.Add(2 * time.Second)
	flush(t, r) // t0+1 and t0+2 recorded, nothing done
	res := read(t, newStore(), t0.Add(time.Minute), history.Query{Metrics: []string{history.QueueDone, history.FeedPublished}, Window: "15m"})
	want := map[int64]*float64{t0.Unix() - 1: nil, t0.Unix(): ptr(2), t0.Unix() + 1: ptr(0), t0.Unix() + 2: ptr(0), t0.Unix() + 3: nil}
	for sec, w := range want {
		v, ok := valueAt(t, res, 0, sec)
		if ok != (w != nil) || (ok && v != *w) {
			t.Errorf("queue.done at t0%+d = %v %v, want %v", sec-t0.Unix(), v, ok, show(w))
		}
	}
	if len(res.Series) != 2 || res.Series[1].Metric != history.FeedPublished {
		t.Fatalf("series %+v: a metric without labels is answered even before it was written", res.Series)
	}
	if v, ok := valueAt(t, res, 1, t0.Unix()+1); !ok || v != 0 {
		t.Errorf("feed.published while recording = %v %v, want 0", v, ok)
	}
}

func ptr(v float64) *float64 { return &v }

func show(p *float64) any {
	if p == nil {
		return "null"
	}
	return *p
}

func restart(t *testing.T, open Backend) {
	t0 := base()
	c := NewClock(t0)
	newStore := open(t, c.Now)
	old := recorder(t, newStore(), c, 0)
	old.Add(history.IndexApplied, 11, "binlog")
	old.Set(history.IndexLag, 1.5, "binlog")
	flush(t, old)
	// A new process: a new store and recorder on the same backend.
	c.Add(5 * time.Second)
	fresh := recorder(t, newStore(), c, 0)
	fresh.Add(history.IndexApplied, 1, "binlog")
	flush(t, fresh)
	res := read(t, newStore(), t0.Add(time.Minute), history.Query{Metrics: []string{history.IndexApplied, history.IndexLag}, Window: "15m", Labels: map[string]string{"source": "binlog"}})
	if v, ok := valueAt(t, res, 0, t0.Unix()); !ok || v != 11 {
		t.Errorf("index.applied before the restart = %v %v, want 11", v, ok)
	}
	if v, ok := valueAt(t, res, 1, t0.Unix()); !ok || v != 1.5 {
		t.Errorf("index.lag before the restart = %v %v, want 1.5", v, ok)
	}
	if v, ok := valueAt(t, res, 0, t0.Unix()+5); !ok || v != 1 {
		t.Errorf("index.applied after the restart = %v %v, want 1", v, ok)
	}
}

func expired(t *testing.T, open Backend) {
	t0 := base()
	c := NewClock(t0)
	newStore := open(t, c.Now)
	store := newStore()
	// Written 20 minutes late: the 1 s bucket's retention (16 min) has passed, the 10 s and
	// 1 min buckets' has not.
	at := t0.Add(-20 * time.Minute).Unix()
	b := history.Batch{Counts: []history.Count{{Second: at, Field: history.QueueDone + "\x1fq", N: 5}}}
	if err := store.Write(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	fields := []string{history.QueueDone + "\x1fq"}
	for _, tier := range history.Tiers {
		got, err := store.Read(t.Context(), tier, tier.Start(at), tier.Start(at), fields, false)
		if err != nil {
			t.Fatal(err)
		}
		_, kept := got[0][fields[0]]
		if want := tier.Step > 1; kept != want {
			t.Errorf("tier %s: bucket 20 min old kept = %v, want %v", tier.Window, kept, want)
		}
	}
	// 2 hours late, only the day's tier keeps it.
	at = t0.Add(-2 * time.Hour).Unix()
	b.Counts[0].Second = at
	if err := store.Write(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	for _, tier := range history.Tiers {
		got, err := store.Read(t.Context(), tier, tier.Start(at), tier.Start(at), fields, false)
		if err != nil {
			t.Fatal(err)
		}
		if _, kept := got[0][fields[0]]; kept != (tier.Step == 60) {
			t.Errorf("tier %s: bucket 2 h old kept = %v", tier.Window, kept)
		}
	}
}

func seriesCap(t *testing.T, open Backend) {
	t0 := base()
	c := NewClock(t0)
	newStore := open(t, c.Now)
	r := recorder(t, newStore(), c, 3)
	r.Add(history.QueueDone, 1, "a")
	r.Add(history.QueueDone, 1, "b")
	r.Set(history.QueueSize, 4, "a", "pending")
	// Past the cap: counters count into "(other)", gauges are not recorded.
	r.Add(history.QueueDone, 5, "c")
	r.Add(history.QueueDone, 2, "d")
	r.Set(history.QueueSize, 9, "c", "pending")
	r.Add(history.QueueDone, 1, "a")    // a known series still counts
	r.Add(history.FeedPublished, 1)     // a metric without labels is always recorded
	r.Set(history.FeedFanoutBacklog, 6) // and its gauge too
	flush(t, r)
	st := r.Stats()
	if st.Overflow != 8 || st.Series != 6 || st.MaxSeries != 3 {
		t.Errorf("stats = %+v, want 8 overflowed events (5 + 2 into (other), 1 gauge), 3 series plus (other) and the 2 without labels", st)
	}
	res := read(t, newStore(), t0.Add(time.Minute), history.Query{Metrics: []string{history.QueueDone, history.QueueSize,
		history.FeedPublished, history.FeedFanoutBacklog}, Window: "15m"})
	got := map[string]float64{}
	for i, s := range res.Series {
		v, _ := valueAt(t, res, i, t0.Unix())
		got[s.Metric+" "+s.Labels["queue"]] = v
	}
	want := map[string]float64{"queue.done a": 2, "queue.done b": 1, "queue.done " + history.OtherLabel: 7, "queue.size a": 4,
		"feed.published ": 1, "feed.fanout_backlog ": 6}
	if len(got) != len(want) {
		t.Errorf("series = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
}

func labels(t *testing.T, open Backend) {
	t0 := base()
	c := NewClock(t0)
	newStore := open(t, c.Now)
	r := recorder(t, newStore(), c, 0)
	for _, s := range []string{"pending", "active", "dead"} {
		r.Set(history.QueueSize, 1, "q1", s)
		r.Set(history.QueueSize, 2, "q2", s)
	}
	r.Set(history.ExecutorTasks, 3, "RUNNING")
	r.Observe(history.ExecutorStageSeconds, 0.3, "deploy")
	flush(t, r)
	at := t0.Add(time.Minute)
	res := read(t, newStore(), at, history.Query{Metrics: []string{history.QueueSize}, Window: "15m", Labels: map[string]string{"queue": "q2"}})
	if len(res.Series) != 3 {
		t.Fatalf("label.queue=q2: %d series, want 3", len(res.Series))
	}
	for i, s := range res.Series {
		if v, ok := valueAt(t, res, i, t0.Unix()); s.Labels["queue"] != "q2" || !ok || v != 2 {
			t.Errorf("series %v = %v %v", s.Labels, v, ok)
		}
	}
	if s := res.Series[0]; s.Labels["state"] != "active" || s.Unit != "count" {
		t.Errorf("first series %+v, want sorted by label values", s)
	}
	cat, err := history.NewReader(newStore(), func() time.Time { return at }).Catalog(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, m := range cat {
		seen[m.Name] = len(m.Seen)
	}
	if seen["queue.size"] != 6 || seen["executor.tasks"] != 1 || seen["executor.stage_duration.p99"] != 1 || seen["queue.done"] != 0 {
		t.Errorf("label sets seen = %v", seen)
	}
}

func usage(t *testing.T, open Backend) {
	t0 := base()
	c := NewClock(t0)
	newStore := open(t, c.Now)
	store := newStore()
	r := recorder(t, store, c, 0)
	r.Add(history.QueueDone, 1, "q")
	r.Set(history.QueueSize, 1, "q", "pending")
	flush(t, r)
	u, err := store.Usage(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// One bucket per tier, plus the registry of 2 series.
	if u.Buckets != 4 || u.Series != 2 || u.Bytes <= 0 {
		t.Errorf("usage = %+v, want 4 buckets and 2 series", u)
	}
}

func wholeReads(t *testing.T, open Backend) {
	t0 := base()
	c := NewClock(t0)
	newStore := open(t, c.Now)
	store := newStore()
	r := recorder(t, store, c, 0)
	r.Add(history.QueueDone, 3, "a")
	r.Add(history.QueueDone, 4, "b")
	r.Set(history.QueueSize, 1.5, "a", "dead")
	c.Add(2 * time.Second)
	r.Add(history.QueueDone, 5, "a")
	flush(t, r)
	fields := []string{"queue.done\x1fa", "queue.size\x1fa\x1fdead", "queue.done\x1fnever"}
	for _, tier := range history.Tiers {
		from, to := tier.Start(t0.Unix())-tier.Step, tier.Start(t0.Unix()+2)
		byField, err := store.Read(t.Context(), tier, from, to, fields, false)
		if err != nil {
			t.Fatal(err)
		}
		whole, err := store.Read(t.Context(), tier, from, to, fields, true)
		if err != nil {
			t.Fatal(err)
		}
		if len(byField) != len(whole) || len(whole) != int((to-from)/tier.Step+1) {
			t.Fatalf("tier %s: %d and %d buckets", tier.Window, len(byField), len(whole))
		}
		for i := range whole {
			if fmt.Sprint(whole[i]) != fmt.Sprint(byField[i]) {
				t.Errorf("tier %s bucket %d: whole %v, by field %v", tier.Window, i, whole[i], byField[i])
			}
			if _, ok := whole[i]["queue.done\x1fb"]; ok {
				t.Errorf("tier %s: a field not asked for is answered", tier.Window)
			}
		}
		if v := whole[1]["queue.done\x1fa"]; tier.Step == 1 && v != 3 || tier.Step > 1 && v != 8 {
			t.Errorf("tier %s: queue.done a = %v", tier.Window, v)
		}
	}
}
