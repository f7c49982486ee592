package history

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redstate/redstate"
)

// Defaults of Options.
const (
	// DefaultMaxSeries bounds the series one Recorder writes (Options.MaxSeries).
	DefaultMaxSeries = 1000
	// DefaultFlushInterval is how often a Recorder writes what it counted.
	DefaultFlushInterval = time.Second
	// DefaultFlushTimeout bounds one write to the store.
	DefaultFlushTimeout = 2 * time.Second
	// registryRefresh is how often a series still written is registered again, so that the
	// registry keeps it while it is written.
	registryRefresh = time.Minute
	// maxUpSeconds bounds the up marks of one flush (after a long stall, only the last ones).
	maxUpSeconds = 60
)

// OtherLabel replaces the label values of a counter or latency series that would pass the
// series cap (Options.MaxSeries): such events still count, into the metric's "(other)" series.
const OtherLabel = "(other)"

// Options configure a Recorder.
type Options struct {
	// Store receives the flushes (required).
	Store Store
	// MaxSeries bounds the labelled series this process writes (default DefaultMaxSeries).
	// Past it, a new counter or latency series counts into its metric's OtherLabel series, and
	// a new gauge series is not recorded; both are counted in Stats.Overflow. The metrics
	// without labels and the OtherLabel series are always written (one each, bounded by the
	// catalog). A series not written for a day no longer counts.
	MaxSeries int
	// FlushInterval is how often Run writes (default DefaultFlushInterval).
	FlushInterval time.Duration
	// FlushTimeout bounds one write (default DefaultFlushTimeout): a write that fails or
	// takes longer is dropped and counted in Stats.Dropped.
	FlushTimeout time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logger receives a line when writes start failing and when they succeed again.
	Logger *slog.Logger
}

// Validate checks the options. Errors: EINVALID.
func (o Options) Validate() error {
	if o.Store == nil {
		return redstate.Errorf(redstate.EINVALID, "history: Store is required")
	}
	if o.MaxSeries < 0 || o.FlushInterval < 0 || o.FlushTimeout < 0 {
		return redstate.Errorf(redstate.EINVALID, "history: MaxSeries, FlushInterval and FlushTimeout must not be negative")
	}
	return nil
}

// Sampler sets gauges read from shared state (queue sizes, a source's lag) with Recorder.Set.
// A Recorder calls its samplers at every flush, before writing, all within half the flush
// timeout (the write has a whole one of its own).
type Sampler func(ctx context.Context, r *Recorder)

// Recorder counts one process's events in memory and writes them to its Store once per
// FlushInterval (Run). Add, Set and Observe never wait on the store: they take a mutex and
// update a map. A nil *Recorder records nothing. Safe for concurrent use.
type Recorder struct {
	opts Options
	log  *slog.Logger

	mu       sync.Mutex
	counts   map[countKey]int64
	gauges   map[gaugeKey]float64
	series   map[seriesKey]*seriesState
	samplers []Sampler
	coarse   []coarsePending // the coarser tiers' sums, written when their buckets end
	lastUp   int64           // the last second marked up
	pruned   int64           // when series not written for a day were last forgotten

	events, dropped, overflow, invalid, flushes, failed atomic.Int64
	failing                                             atomic.Bool
}

// seriesKey identifies a recorded series: its recorded name and up to two label values.
type seriesKey struct {
	metric string
	l0, l1 string
}

// seriesState is what a Recorder knows of one series it writes.
type seriesState struct {
	field      string
	lastWrite  int64 // second
	registered int64 // second of its last registration that was written
}

// countKey is one counted bucket of a series: a second and, for a histogram, its bucket.
type countKey struct {
	series seriesKey
	second int64
	bucket int // -1 for a counter
}

// gaugeKey is one second of a gauge series.
type gaugeKey struct {
	series seriesKey
	second int64
}

// NewRecorder returns a Recorder writing to o.Store. Errors: EINVALID (Validate).
func NewRecorder(o Options) (*Recorder, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.MaxSeries == 0 {
		o.MaxSeries = DefaultMaxSeries
	}
	if o.FlushInterval == 0 {
		o.FlushInterval = DefaultFlushInterval
	}
	if o.FlushTimeout == 0 {
		o.FlushTimeout = DefaultFlushTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Recorder{opts: o, log: log, counts: map[countKey]int64{}, gauges: map[gaugeKey]float64{},
		series: map[seriesKey]*seriesState{}, coarse: newCoarse()}
	r.lastUp = o.Now().Unix() - 1
	return r, nil
}

// AddSampler adds a sampler called at every flush. Safe for concurrent use.
func (r *Recorder) AddSampler(s Sampler) {
	if r == nil || s == nil {
		return
	}
	r.mu.Lock()
	r.samplers = append(r.samplers, s)
	r.mu.Unlock()
}

// Add counts n events of counter metric (e.g. QueueDone) with its label values (in the order
// of the metric's Labels) in the current second.
func (r *Recorder) Add(metric string, n int64, labels ...string) {
	if r == nil || n == 0 {
		return
	}
	r.record(metric, KindCounter, n, labels, func(k seriesKey, sec int64) {
		r.counts[countKey{series: k, second: sec, bucket: -1}] += n
	})
}

// Set sets gauge metric (e.g. QueueSize) with its label values to v in the current second;
// the last Set of a bucket wins, whichever instance made it.
func (r *Recorder) Set(metric string, v float64, labels ...string) {
	if r == nil {
		return
	}
	r.record(metric, KindGauge, 1, labels, func(k seriesKey, sec int64) {
		r.gauges[gaugeKey{series: k, second: sec}] = v
	})
}

// Observe counts one latency of seconds into histogram metric (QueueLatency,
// ExecutorStageSeconds) with its label values, in the current second.
func (r *Recorder) Observe(metric string, seconds float64, labels ...string) {
	if r == nil {
		return
	}
	b := bucketOf(seconds)
	r.record(metric, kindHistogram, 1, labels, func(k seriesKey, sec int64) {
		r.counts[countKey{series: k, second: sec, bucket: b}]++
	})
}

// record checks metric and labels, admits the series (or its overflow) and applies add (n
// events) under the lock.
func (r *Recorder) record(metric string, kind Kind, n int64, labels []string, add func(seriesKey, int64)) {
	r.events.Add(n)
	k, ok := keyOf(metric, kind, labels)
	if !ok {
		r.invalid.Add(n)
		return
	}
	sec := r.opts.Now().Unix()
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.series[k]
	if st == nil {
		// A metric without labels has one series: it is always admitted, like the "(other)"
		// ones (a handful, bounded by the catalog).
		if len(r.series) >= r.opts.MaxSeries && len(labels) > 0 {
			r.overflow.Add(n)
			if kind == KindGauge {
				return
			}
			k = otherKey(k, len(labels))
			if st = r.series[k]; st == nil {
				st = r.admit(k)
			}
		} else {
			st = r.admit(k)
		}
	}
	st.lastWrite = sec
	add(k, sec)
}

// admit adds a series (under the lock).
func (r *Recorder) admit(k seriesKey) *seriesState {
	labels := []string{k.l0, k.l1}
	_, n := recordedKind(k.metric)
	st := &seriesState{field: seriesField(k.metric, labels[:n])}
	r.series[k] = st
	return st
}

// keyOf checks a recorded metric's kind and label values and returns its key.
func keyOf(metric string, kind Kind, labels []string) (seriesKey, bool) {
	want, n := recordedKind(metric)
	if want != kind || len(labels) != n {
		return seriesKey{}, false
	}
	for _, l := range labels {
		if l == "" || strings.IndexFunc(l, func(c rune) bool { return c < ' ' || c == 0x7f }) >= 0 {
			return seriesKey{}, false
		}
	}
	k := seriesKey{metric: metric}
	if n > 0 {
		k.l0 = labels[0]
	}
	if n > 1 {
		k.l1 = labels[1]
	}
	return k, true
}

// otherKey is the overflow series of k's metric.
func otherKey(k seriesKey, n int) seriesKey {
	o := seriesKey{metric: k.metric, l0: OtherLabel}
	if n > 1 {
		o.l1 = OtherLabel
	}
	return o
}

// Stats are a Recorder's counts since it was made.
type Stats struct {
	// Events is how many events it was given: the n of every Add, one per Set and Observe.
	Events int64 `json:"events"`
	// Dropped is how many of them were lost because their 1 s write failed (the store did not
	// answer within FlushTimeout). A coarser tier's bucket whose write failed is lost for that
	// tier only, and counted in FailedFlushes.
	Dropped int64 `json:"dropped"`
	// Overflow is how many went to an OtherLabel series or were not recorded (gauges) because
	// the series cap was reached.
	Overflow int64 `json:"overflow"`
	// Invalid is how many named an unknown metric, the wrong kind, or bad label values (not
	// recorded).
	Invalid int64 `json:"invalid"`
	// Flushes and FailedFlushes count the writes to the store (one per flush for the 1 s tier,
	// one more when a coarser tier's bucket ended).
	Flushes       int64 `json:"flushes"`
	FailedFlushes int64 `json:"failedFlushes"`
	// Series is how many series it writes now (at most MaxSeries, plus the OtherLabel ones).
	Series int `json:"series"`
	// MaxSeries is the series cap.
	MaxSeries int `json:"maxSeries"`
}

// Stats returns the recorder's counts.
func (r *Recorder) Stats() Stats {
	if r == nil {
		return Stats{}
	}
	r.mu.Lock()
	n := len(r.series)
	r.mu.Unlock()
	return Stats{Events: r.events.Load(), Dropped: r.dropped.Load(), Overflow: r.overflow.Load(), Invalid: r.invalid.Load(),
		Flushes: r.flushes.Load(), FailedFlushes: r.failed.Load(), Series: n, MaxSeries: r.opts.MaxSeries}
}

// Flush is one tick of Run: it runs the samplers and writes the 1 s tier's new counts, and the
// buckets of the coarser tiers that have ended. Each write is bounded by FlushTimeout (all of a
// flush's writes together); a write that fails is dropped (Stats.Dropped counts the events of a
// failed 1 s write) and its error returned (EUNAVAILABLE).
func (r *Recorder) Flush(ctx context.Context) error { return r.flush(ctx, false) }

// FlushAll is Flush writing the coarser tiers' open buckets too: what Run does when it stops
// (the next process adds to the same buckets), and what a test does to read every tier at once.
func (r *Recorder) FlushAll(ctx context.Context) error { return r.flush(ctx, true) }

// flush runs the samplers and writes the 1 s tier's new counts, and the buckets of the coarser
// tiers that have ended (all of them when all is true). The coarser tiers' counts are summed
// in memory until their bucket ends, so that a busy second costs one write per field, not one
// per tier.
func (r *Recorder) flush(ctx context.Context, all bool) error {
	r.sample(ctx)
	ctx, cancel := context.WithTimeout(ctx, r.opts.FlushTimeout)
	defer cancel()
	now := r.opts.Now().Unix()
	batches, events, registering := r.take(now, all)
	var first error
	for i, b := range batches {
		r.flushes.Add(1)
		err := r.opts.Store.Write(ctx, b)
		if err == nil {
			continue
		}
		r.failed.Add(1)
		if i == 0 {
			r.dropped.Add(events)
			registering = nil
		}
		if first == nil {
			first = err
		}
	}
	if first != nil {
		if !r.failing.Swap(true) {
			r.log.Warn("statistics history: writing failed; events are dropped (and counted) until it works again", "err", first)
		}
		return first
	}
	if r.failing.Swap(false) {
		r.log.Info("statistics history: writing works again")
	}
	r.mu.Lock()
	for _, st := range registering {
		st.registered = now
	}
	r.mu.Unlock()
	return nil
}

// sample runs the samplers within half the flush timeout of their own, so that a slow sampler
// never eats the write's time.
func (r *Recorder) sample(ctx context.Context) {
	r.mu.Lock()
	samplers := r.samplers
	r.mu.Unlock()
	if len(samplers) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, r.opts.FlushTimeout/2)
	defer cancel()
	for _, s := range samplers {
		s(ctx, r)
	}
}

// take swaps out what was counted: the 1 s tier's batch first (with the up marks up to now and
// the series to register), then one batch per coarser tier holding its ended buckets (or all
// of them when all is true); and the number of events of the first.
func (r *Recorder) take(now int64, all bool) ([]Batch, int64, []*seriesState) {
	r.mu.Lock()
	defer r.mu.Unlock()
	counts, gauges := r.counts, r.gauges
	r.counts, r.gauges = map[countKey]int64{}, map[gaugeKey]float64{}
	fine := Batch{Counts: make([]Count, 0, len(counts)), Gauges: make([]GaugeValue, 0, len(gauges)), Seen: map[string]int64{}, Tiers: []int{0}}
	var events int64
	var registering []*seriesState
	seen := func(k seriesKey) string {
		st := r.series[k]
		if _, ok := fine.Seen[st.field]; !ok && now-st.registered >= int64(registryRefresh/time.Second) {
			fine.Seen[st.field] = now
			registering = append(registering, st)
		}
		return st.field
	}
	for k, n := range counts {
		field := seen(k.series)
		if k.bucket >= 0 {
			field = histogramField(field, k.bucket)
		}
		fine.Counts = append(fine.Counts, Count{Second: k.second, Field: field, N: n})
		events += n
	}
	for k, v := range gauges {
		fine.Gauges = append(fine.Gauges, GaugeValue{Second: k.second, Field: seen(k.series), Value: v})
		events++
	}
	for sec := max(r.lastUp+1, now-maxUpSeconds+1); sec <= now; sec++ {
		fine.Up = append(fine.Up, sec)
	}
	r.lastUp = now
	batches := []Batch{fine}
	for i := range r.coarse {
		c := &r.coarse[i]
		c.add(fine)
		if b, ok := c.take(now, all); ok {
			batches = append(batches, b)
		}
	}
	if now-r.pruned >= int64(registryRefresh/time.Second) {
		r.pruned = now
		for k, st := range r.series {
			if st.lastWrite+seriesRetention <= now {
				delete(r.series, k)
			}
		}
	}
	return batches, events, registering
}

// Run flushes every FlushInterval until ctx ends, then writes everything (FlushAll).
func (r *Recorder) Run(ctx context.Context) {
	t := time.NewTicker(r.opts.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			_ = r.FlushAll(context.WithoutCancel(ctx))
			return
		case <-t.C:
			_ = r.Flush(ctx)
		}
	}
}

// coarsePending sums one coarser tier's buckets until they end.
type coarsePending struct {
	tier   int // index in Tiers
	counts map[coarseKey]int64
	gauges map[coarseKey]gaugeAt // the last value of a field's bucket
	up     map[int64]bool        // bucket starts
}

// coarseKey is one field of one bucket.
type coarseKey struct {
	field string
	start int64
}

// gaugeAt is a gauge's last value and when it was set.
type gaugeAt struct {
	second int64
	value  float64
}

// newCoarse returns the pending sums of every tier but the first.
func newCoarse() []coarsePending {
	out := make([]coarsePending, 0, len(Tiers)-1)
	for i := 1; i < len(Tiers); i++ {
		out = append(out, coarsePending{tier: i, counts: map[coarseKey]int64{}, gauges: map[coarseKey]gaugeAt{}, up: map[int64]bool{}})
	}
	return out
}

// add sums a 1 s batch into the tier's buckets.
func (c *coarsePending) add(b Batch) {
	t := Tiers[c.tier]
	for _, n := range b.Counts {
		c.counts[coarseKey{n.Field, t.Start(n.Second)}] += n.N
	}
	for _, g := range b.Gauges {
		k := coarseKey{g.Field, t.Start(g.Second)}
		if last, ok := c.gauges[k]; !ok || g.Second >= last.second {
			c.gauges[k] = gaugeAt{g.Second, g.Value}
		}
	}
	for _, sec := range b.Up {
		c.up[t.Start(sec)] = true
	}
}

// take returns the batch of the buckets that ended by now (every bucket when all is true) and
// forgets them; false when there is none.
func (c *coarsePending) take(now int64, all bool) (Batch, bool) {
	t := Tiers[c.tier]
	ended := func(start int64) bool { return all || start+t.Step <= now }
	b := Batch{Tiers: []int{c.tier}}
	for k, n := range c.counts {
		if ended(k.start) {
			b.Counts = append(b.Counts, Count{Second: k.start, Field: k.field, N: n})
			delete(c.counts, k)
		}
	}
	for k, g := range c.gauges {
		if ended(k.start) {
			b.Gauges = append(b.Gauges, GaugeValue{Second: g.second, Field: k.field, Value: g.value})
			delete(c.gauges, k)
		}
	}
	for start := range c.up {
		if ended(start) {
			b.Up = append(b.Up, start)
			delete(c.up, start)
		}
	}
	return b, len(b.Counts)+len(b.Gauges)+len(b.Up) > 0
}

// Failing reports whether the last flush failed.
func (r *Recorder) Failing() bool { return r != nil && r.failing.Load() }
