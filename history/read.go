package history

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/redstate/redstate"
)

// MaxSeriesPerRead bounds the series of one Read: a read matching more is refused (ETOOLARGE)
// and must be narrowed with label filters.
const MaxSeriesPerRead = 100

// MaxFieldReads bounds the bucket fields one Read looks up (points × fields; a latency series
// reads 22 fields, its histogram's buckets): a 24 h read of 15 latency series, or a 15 min read
// of 100 counters. The largest costs Redis 40-100 ms and this process 0.3 s
// (BenchmarkRedisReadLargest).
const MaxFieldReads = 500_000

// Query is what a Read answers.
type Query struct {
	// Metrics are the metrics' names (Metrics lists them); at least one.
	Metrics []string
	// Window is "15m", "1h" or "24h" (TierOf).
	Window string
	// Labels keep only the series whose label of that name has that value; a filter applies
	// to the metrics that have the label, and must name a label of at least one of them.
	Labels map[string]string
	// Since, when not zero, keeps only the points after it (Unix seconds): a chart that has
	// the window polls for its new points only.
	Since int64
}

// Result is a Read's answer: one time axis shared by every series (uPlot's data shape).
type Result struct {
	// Window is the query's window.
	Window string `json:"window"`
	// Step is the distance between two times: "1s", "10s" or "1m".
	Step string `json:"step"`
	// Times are the buckets' starts (Unix seconds), oldest first.
	Times []int64 `json:"times"`
	// Series are the matching series, by metric in the query's order, then by labels.
	Series []Series `json:"series"`
}

// Series is one metric and label set over Result.Times.
type Series struct {
	// Metric is the metric's name.
	Metric string `json:"metric"`
	// Labels are its label values by label name.
	Labels map[string]string `json:"labels"`
	// Unit is the metric's unit.
	Unit string `json:"unit"`
	// Values are its values at Result.Times; nil (JSON null) where no instance wrote: for a
	// counter, no instance was recording; for a gauge, none set it; for a quantile, nothing
	// was observed.
	Values []*float64 `json:"values"`
}

// Reader answers queries from a Store.
type Reader struct {
	store Store
	now   func() time.Time
}

// NewReader returns a reader of store; now (nil: time.Now) places the windows.
func NewReader(store Store, now func() time.Time) *Reader {
	if now == nil {
		now = time.Now
	}
	return &Reader{store: store, now: now}
}

// flushGrace is how long after a bucket's end a read waits before answering it, so that the
// last point is complete: every instance flushes within a FlushInterval.
const flushGrace = int64(DefaultFlushInterval / time.Second)

// Span returns the bucket starts a read of tier t answers at now: its Points last buckets
// that ended at least flushGrace ago.
func (t Tier) Span(now time.Time) (from, to int64) {
	to = t.Start(now.Unix()-flushGrace) - t.Step
	return to - int64(t.Points-1)*t.Step, to
}

// Read answers q. Errors: EINVALID (window, metric, label filter), ETOOLARGE (more than
// MaxSeriesPerRead series match), EUNAVAILABLE.
func (r *Reader) Read(ctx context.Context, q Query) (Result, error) {
	tier, err := TierOf(q.Window)
	if err != nil {
		return Result{}, err
	}
	metrics, err := queried(q)
	if err != nil {
		return Result{}, err
	}
	registry, err := r.store.Series(ctx)
	if err != nil {
		return Result{}, err
	}
	type selected struct {
		metric Metric
		field  string
		labels []string
	}
	var sel []selected
	for _, m := range metrics {
		var found []selected
		if len(m.Labels) == 0 {
			found = append(found, selected{metric: m, field: m.recorded})
		}
		for field := range registry {
			name, labels := splitField(field)
			if name != m.recorded || len(m.Labels) == 0 || len(labels) != len(m.Labels) || !matches(m, labels, q.Labels) {
				continue
			}
			found = append(found, selected{metric: m, field: field, labels: labels})
		}
		slices.SortFunc(found, func(a, b selected) int { return slices.Compare(a.labels, b.labels) })
		sel = append(sel, found...)
	}
	if len(sel) > MaxSeriesPerRead {
		return Result{}, redstate.Errorf(redstate.ETOOLARGE, "%d series match, at most %d are answered: narrow the read with label filters (label.<name>=<value>)", len(sel), MaxSeriesPerRead)
	}
	fields := []string{upField}
	have := map[string]bool{upField: true}
	add := func(f string) {
		if !have[f] {
			have[f] = true
			fields = append(fields, f)
		}
	}
	for _, s := range sel {
		if s.metric.Kind == KindQuantile {
			for i := 0; i <= len(Bounds); i++ {
				add(histogramField(s.field, i))
			}
		} else {
			add(s.field)
		}
	}
	from, to := tier.Span(r.now())
	if q.Since >= from {
		from = tier.Start(q.Since) + tier.Step
	}
	if points := (to-from)/tier.Step + 1; points > 0 && int64(len(fields))*points > MaxFieldReads {
		return Result{}, redstate.Errorf(redstate.ETOOLARGE, "this read would look up %d bucket fields, at most %d: read fewer latency series or a shorter window",
			int64(len(fields))*points, MaxFieldReads)
	}
	buckets, err := r.store.Read(ctx, tier, from, to, fields, len(fields)*wholeBucketShare >= bucketFields(registry))
	if err != nil {
		return Result{}, err
	}
	res := Result{Window: tier.Window, Step: tier.StepString(), Times: make([]int64, 0, len(buckets)), Series: make([]Series, 0, len(sel))}
	for start := from; start <= to; start += tier.Step {
		res.Times = append(res.Times, start)
	}
	for _, s := range sel {
		labels := make(map[string]string, len(s.labels))
		for i, l := range s.labels {
			labels[s.metric.Labels[i]] = l
		}
		res.Series = append(res.Series, Series{Metric: s.metric.Name, Labels: labels, Unit: s.metric.Unit,
			Values: values(s.metric, s.field, tier, buckets)})
	}
	return res, nil
}

// wholeBucketShare: a read asking for at least a quarter of the fields a bucket may hold reads
// whole buckets (Store.Read's whole).
const wholeBucketShare = 4

// bucketFields is how many fields a bucket may hold at most, from the registry: one per counter
// or gauge series, one per histogram bucket of a latency series, and the up mark.
func bucketFields(registry map[string]int64) int {
	n := 1
	for field := range registry {
		name, _ := splitField(field)
		if kind, _ := recordedKind(name); kind == kindHistogram {
			n += len(Bounds) + 1
		} else {
			n++
		}
	}
	return n
}

// values computes a series' values from the buckets read.
func values(m Metric, field string, t Tier, buckets []map[string]float64) []*float64 {
	out := make([]*float64, len(buckets))
	counts := make([]float64, len(Bounds)+1)
	var names []string
	if m.Kind == KindQuantile {
		names = make([]string, len(counts))
		for j := range names {
			names[j] = histogramField(field, j)
		}
	}
	for i, b := range buckets {
		var v float64
		ok := false
		switch m.Kind {
		case KindCounter:
			n, counted := b[field]
			if counted || b[upField] > 0 {
				per := float64(t.Step)
				if m.Unit == "1/min" {
					per /= 60
				}
				v, ok = n/per, true
			}
		case KindGauge:
			v, ok = b[field]
		case KindQuantile:
			for j, name := range names {
				counts[j] = b[name]
			}
			v, ok = quantileOf(counts, m.quantile)
		}
		if ok {
			out[i] = &v
		}
	}
	return out
}

// queried checks a query's metrics and label filters and returns the metrics, without
// duplicates. Errors: EINVALID.
func queried(q Query) ([]Metric, error) {
	if len(q.Metrics) == 0 {
		return nil, redstate.Errorf(redstate.EINVALID, "name at least one metric (GET /v1/stats/metrics lists them)")
	}
	var out []Metric
	for _, name := range q.Metrics {
		m, err := Lookup(name)
		if err != nil {
			return nil, err
		}
		if !slices.ContainsFunc(out, func(o Metric) bool { return o.Name == m.Name }) {
			out = append(out, m)
		}
	}
	for label := range q.Labels {
		if !slices.ContainsFunc(out, func(m Metric) bool { return slices.Contains(m.Labels, label) }) {
			names := make([]string, len(out))
			for i, m := range out {
				names[i] = m.Name
			}
			return nil, redstate.Errorf(redstate.EINVALID, "label %q is not a label of %s", label, strings.Join(names, ", "))
		}
	}
	return out, nil
}

// matches reports whether a series of m with label values labels passes the filters.
func matches(m Metric, labels []string, filters map[string]string) bool {
	for i, name := range m.Labels {
		if want, ok := filters[name]; ok && labels[i] != want {
			return false
		}
	}
	return true
}

// MetricInfo is a metric with the label values seen in the last day.
type MetricInfo struct {
	Metric
	// Seen are the label sets of its series in the registry, sorted (none for a metric
	// without labels).
	Seen []map[string]string `json:"seen"`
}

// Catalog returns every metric with the label sets written in the last day. Errors:
// EUNAVAILABLE.
func (r *Reader) Catalog(ctx context.Context) ([]MetricInfo, error) {
	registry, err := r.store.Series(ctx)
	if err != nil {
		return nil, err
	}
	byRecorded := map[string][][]string{}
	for field := range registry {
		name, labels := splitField(field)
		byRecorded[name] = append(byRecorded[name], labels)
	}
	out := make([]MetricInfo, 0, len(catalog))
	for _, m := range catalog {
		info := MetricInfo{Metric: m, Seen: []map[string]string{}}
		sets := byRecorded[m.recorded]
		slices.SortFunc(sets, slices.Compare)
		for _, labels := range sets {
			if len(m.Labels) == 0 || len(labels) != len(m.Labels) {
				continue
			}
			set := make(map[string]string, len(labels))
			for i, l := range labels {
				set[m.Labels[i]] = l
			}
			info.Seen = append(info.Seen, set)
		}
		out = append(out, info)
	}
	return out, nil
}
