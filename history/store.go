package history

import (
	"context"
	"strconv"
	"strings"
)

// Store keeps the buckets of every instance. RedisStore and MemoryStore implement it; the
// conformance suite (package historytest) proves they behave the same.
type Store interface {
	// Write applies one batch to its tiers (Batch.Tiers): it adds its counts into the buckets holding their
	// seconds, sets its gauges (the latest second of a bucket wins, and a later Write wins over
	// an earlier one), marks the buckets of its Up seconds and registers its series. A bucket
	// whose retention has already passed is not written. Errors: EUNAVAILABLE (the batch may be
	// partly applied).
	Write(ctx context.Context, b Batch) error
	// Read returns tier t's buckets starting at from, from+Step, ..., to (inclusive): for each
	// bucket, in order, the values of the fields asked for that it holds (a field no instance
	// wrote is absent). whole says the fields are a large part of what a bucket may hold: the
	// store may then read whole buckets and keep the fields asked for (Redis: HGETALL rather
	// than an HMGET that scans a small hash once per field). Errors: EUNAVAILABLE.
	Read(ctx context.Context, t Tier, from, to int64, fields []string, whole bool) ([]map[string]float64, error)
	// Series returns the registry: the field of every series written in the last day (Tiers'
	// longest retention) → the last second it was written. Errors: EUNAVAILABLE.
	Series(ctx context.Context) (map[string]int64, error)
	// Usage measures what the history holds now. Errors: EUNAVAILABLE.
	Usage(ctx context.Context) (Usage, error)
}

// Usage is what a Store holds.
type Usage struct {
	// Buckets is the number of buckets (Redis keys) of every tier, plus the registry.
	Buckets int64 `json:"buckets"`
	// Bytes is their size (Redis: MEMORY USAGE; memory: an estimate of the fields' size).
	Bytes int64 `json:"bytes"`
	// Series is the number of series in the registry.
	Series int64 `json:"series"`
}

// Batch is what one Recorder flush writes.
type Batch struct {
	// Counts are counter and histogram increments.
	Counts []Count
	// Gauges are gauge values; for one field and bucket the latest second wins.
	Gauges []GaugeValue
	// Up are the seconds the writer was recording: a bucket marked up reads its absent
	// counters as 0 (nothing happened) rather than null (nobody recorded).
	Up []int64
	// Seen are the series written (field → second), for the registry.
	Seen map[string]int64
	// Tiers are the indexes (in Tiers) of the tiers the batch is written to; nil: every tier.
	Tiers []int
}

// tiers returns the tiers b is written to.
func (b Batch) tiers() []Tier {
	if b.Tiers == nil {
		return Tiers
	}
	out := make([]Tier, 0, len(b.Tiers))
	for _, i := range b.Tiers {
		if i >= 0 && i < len(Tiers) {
			out = append(out, Tiers[i])
		}
	}
	return out
}

// Count adds N to a field's bucket holding Second.
type Count struct {
	Second int64
	Field  string
	N      int64
}

// GaugeValue sets a field's bucket holding Second to Value.
type GaugeValue struct {
	Second int64
	Field  string
	Value  float64
}

// upField marks a bucket in which at least one instance was recording.
const upField = "~up"

// fieldSep separates a series field's metric and label values; bucketSep puts a histogram
// bucket's index after its series field. Label values never hold control characters.
const (
	fieldSep  = "\x1f"
	bucketSep = "\x1e"
)

// seriesField is the field of a recorded series: metric and label values.
func seriesField(metric string, labels []string) string {
	if len(labels) == 0 {
		return metric
	}
	return metric + fieldSep + strings.Join(labels, fieldSep)
}

// splitField returns a series field's metric and label values.
func splitField(field string) (string, []string) {
	parts := strings.Split(field, fieldSep)
	return parts[0], parts[1:]
}

// histogramField is the field of bucket i of a histogram series.
func histogramField(series string, i int) string { return series + bucketSep + strconv.Itoa(i) }

// bucketWrite is what one Write does to one bucket.
type bucketWrite struct {
	tier  Tier
	start int64
	incr  map[string]int64
	set   map[string]float64
	up    bool
}

// plan groups a batch by tier and bucket: counts summed, for a gauge the latest second's value.
// Buckets already expired at now (Unix seconds) are left out.
func (b Batch) plan(now int64) []*bucketWrite {
	type key struct {
		step, start int64
	}
	var out []*bucketWrite
	idx := map[key]*bucketWrite{}
	at := func(t Tier, sec int64) *bucketWrite {
		start := t.Start(sec)
		if t.expiresAt(start) <= now {
			return nil
		}
		k := key{t.Step, start}
		w := idx[k]
		if w == nil {
			w = &bucketWrite{tier: t, start: start, incr: map[string]int64{}, set: map[string]float64{}}
			idx[k] = w
			out = append(out, w)
		}
		return w
	}
	latest := map[string]int64{}
	for _, t := range b.tiers() {
		for _, c := range b.Counts {
			if w := at(t, c.Second); w != nil {
				w.incr[c.Field] += c.N
			}
		}
		clear(latest)
		for _, g := range b.Gauges {
			w := at(t, g.Second)
			if w == nil {
				continue
			}
			k := strconv.FormatInt(w.start, 10) + fieldSep + g.Field
			if last, ok := latest[k]; ok && last > g.Second {
				continue
			}
			latest[k] = g.Second
			w.set[g.Field] = g.Value
		}
		for _, sec := range b.Up {
			if w := at(t, sec); w != nil {
				w.up = true
			}
		}
	}
	return out
}
