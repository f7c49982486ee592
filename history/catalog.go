package history

import (
	"slices"

	"github.com/redstate/redstate"
)

// Kind is how a metric is recorded and read.
type Kind string

// The kinds of metrics.
const (
	// KindCounter: events counted per bucket by every instance (Recorder.Add) and summed on
	// read; read as a rate (events per second, or per minute for unit "1/min").
	KindCounter Kind = "counter"
	// KindGauge: a level (Recorder.Set); the last write of a bucket wins, whichever instance
	// made it, and a coarser step reads the last bucket that has a value.
	KindGauge Kind = "gauge"
	// KindQuantile: a quantile of a latency distribution (Recorder.Observe counts each latency
	// into the histogram buckets Bounds); computed on read over the step's buckets of every
	// instance.
	KindQuantile Kind = "quantile"
)

// Metric describes one metric a Reader answers.
type Metric struct {
	// Name is the metric's name, e.g. "queue.done".
	Name string `json:"name"`
	// Unit is what a value counts: "1/s" (events per second), "1/min" (events per minute),
	// "s" (seconds) or "count".
	Unit string `json:"unit"`
	// Kind is counter, gauge or quantile.
	Kind Kind `json:"kind"`
	// Labels are the metric's label names, in the order Recorder calls take their values.
	Labels []string `json:"labels"`
	// Help says what the metric measures.
	Help string `json:"help"`
	// recorded is the recorded series' name: Name itself, or the histogram of a quantile.
	recorded string
	// quantile is the quantile a KindQuantile metric reads (0.5, 0.99).
	quantile float64
}

// The recorded names of the metrics: what a block passes to Recorder.Add (counters), Set
// (gauges) or Observe (latency histograms, read as their .p50 and .p99 quantiles).
const (
	// QueueEnqueued counts jobs enqueued (label queue).
	QueueEnqueued = "queue.enqueued"
	// QueueDone counts jobs acked (label queue).
	QueueDone = "queue.done"
	// QueueFailed counts job runs retried or dead-lettered, and malformed messages (label queue).
	QueueFailed = "queue.failed"
	// QueueLatency observes a job's seconds from enqueue to done (label queue).
	QueueLatency = "queue.latency"
	// QueueSize is a queue's jobs in one state (labels queue, state).
	QueueSize = "queue.size"
	// IndexApplied counts row changes applied to the index (label source).
	IndexApplied = "index.applied"
	// IndexStale counts row changes skipped as stale (label source).
	IndexStale = "index.stale"
	// IndexLag is the age of a source's last applied change when applied (label source).
	IndexLag = "index.lag"
	// IndexBacklog is the changes a source holds that are not applied yet, where the source
	// counts them: a Kafka partition's records (label kafka:<topic>/<partition>), a Redis
	// stream's entries (stream:<key>).
	IndexBacklog = "index.backlog"
	// FeedPublished counts posts published.
	FeedPublished = "feed.published"
	// FeedFanoutBacklog is the fan-out jobs waiting or running.
	FeedFanoutBacklog = "feed.fanout_backlog"
	// FeedDeliveryLag is the seconds from a post's publication to the end of its fan-out.
	FeedDeliveryLag = "feed.delivery_lag"
	// ExecutorTasks is the executor's tasks in one state (label state).
	ExecutorTasks = "executor.tasks"
	// ExecutorStageSeconds observes a stage run's seconds (label stage).
	ExecutorStageSeconds = "executor.stage_duration"
	// BuildsEvents counts build status events (saves, platform results, deletes).
	BuildsEvents = "builds.events"
)

// catalog lists every metric, in the order Metrics returns them.
var catalog = []Metric{
	counter(QueueEnqueued, "1/s", "Jobs enqueued per second.", "queue"),
	counter(QueueDone, "1/s", "Jobs done (acked) per second.", "queue"),
	counter(QueueFailed, "1/s", "Job runs that failed per second (retried or dead-lettered).", "queue"),
	quantile(QueueLatency, 0.5, "Median seconds from a job's enqueue (or due) time to its end.", "queue"),
	quantile(QueueLatency, 0.99, "99th percentile of the seconds from a job's enqueue (or due) time to its end.", "queue"),
	gauge(QueueSize, "count", "Jobs of a queue by state (pending, scheduled, active, retrying, dead).", "queue", "state"),
	counter(IndexApplied, "1/s", "Row changes applied to the index per second.", "source"),
	counter(IndexStale, "1/s", "Row changes skipped as stale (older than the indexed version) per second.", "source"),
	gauge(IndexLag, "s", "Age of the last applied change when it was applied, per source.", "source"),
	gauge(IndexBacklog, "count", "Changes not applied yet, per Kafka partition (records) and Redis stream (entries).", "source"),
	counter(FeedPublished, "1/s", "Feed posts published per second."),
	gauge(FeedFanoutBacklog, "count", "Fan-out jobs waiting (pending, retrying and running)."),
	gauge(FeedDeliveryLag, "s", "Seconds from a post's publication to the end of its fan-out (last fan-out job of the bucket)."),
	gauge(ExecutorTasks, "count", "Executor tasks by state.", "state"),
	quantile(ExecutorStageSeconds, 0.5, "Median seconds of a stage run, per stage handler.", "stage"),
	quantile(ExecutorStageSeconds, 0.99, "99th percentile of the seconds of a stage run, per stage handler.", "stage"),
	counter(BuildsEvents, "1/min", "Build status events per minute."),
}

func counter(name, unit, help string, labels ...string) Metric {
	labels = append([]string{}, labels...)
	return Metric{Name: name, Unit: unit, Kind: KindCounter, Labels: labels, Help: help, recorded: name}
}

func gauge(name, unit, help string, labels ...string) Metric {
	labels = append([]string{}, labels...)
	return Metric{Name: name, Unit: unit, Kind: KindGauge, Labels: labels, Help: help, recorded: name}
}

func quantile(histogram string, q float64, help string, labels ...string) Metric {
	suffix := ".p50"
	if q == 0.99 {
		suffix = ".p99"
	}
	return Metric{Name: histogram + suffix, Unit: "s", Kind: KindQuantile, Labels: labels, Help: help, recorded: histogram, quantile: q}
}

// Metrics returns every metric a Reader answers.
func Metrics() []Metric { return slices.Clone(catalog) }

// Lookup returns the metric named name. Errors: EINVALID naming the unknown metric.
func Lookup(name string) (Metric, error) {
	for _, m := range catalog {
		if m.Name == name {
			return m, nil
		}
	}
	return Metric{}, redstate.Errorf(redstate.EINVALID, "unknown metric %q (GET /v1/stats/metrics lists them)", name)
}

// recordedKind is the kind of a recorded name: counter, gauge, or "histogram" for a quantile's
// distribution, and its number of labels; "" for an unknown name.
func recordedKind(name string) (Kind, int) {
	r, ok := recordedNames[name]
	if !ok {
		return "", 0
	}
	return r.kind, r.labels
}

// recordedNames are the recorded names of the catalog, for recordedKind.
var recordedNames = func() map[string]struct {
	kind   Kind
	labels int
} {
	out := map[string]struct {
		kind   Kind
		labels int
	}{}
	for _, m := range catalog {
		k := m.Kind
		if k == KindQuantile {
			k = kindHistogram
		}
		out[m.recorded] = struct {
			kind   Kind
			labels int
		}{k, len(m.Labels)}
	}
	return out
}()

// kindHistogram is the recorded kind of a quantile's distribution.
const kindHistogram Kind = "histogram"
