package indexbench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/bench"
	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/kafkasource"
	"github.com/redstate/redstate/index/redisindex"
	"github.com/redstate/redstate/redisconn"
)

// KafkaOptions configure RunKafka. Zero values take the defaults noted.
type KafkaOptions struct {
	// Target is the Redis client and the progress writer (Clients is not used: the consumers
	// set their own concurrency).
	bench.Target
	// Events is the number of row changes produced (default 200,000).
	Events int
	// Partitions is the topic's partition count (default 8).
	Partitions int
	// RowsPerMessage is the most rows one Canal flat message carries (default 10).
	RowsPerMessage int
	// Probes is the number of single-message produce-to-applied latency probes (default 200).
	Probes int
}

// KafkaMeasurement is what RunKafka measured for ours and the baseline.
type KafkaMeasurement struct {
	// Events and Records are the row changes and the Kafka records (flat messages) of the stream.
	Events, Records int
	// Ours and Baseline are events/s applied from a topic holding the whole stream (backlog).
	Ours, Baseline float64
	// SteadyOurs and SteadyBaseline are events/s from the first produce of the stream to its
	// last change applied, the consumer running and caught up before (steady).
	SteadyOurs, SteadyBaseline float64
	// Latency and BaselineLatency are the sorted produce-to-applied latencies of the probes.
	Latency, BaselineLatency []time.Duration
	// RedisCPU and BaselineRedisCPU are the Redis server's CPU time per event in the backlog
	// phase (what the implementation costs the server, whatever the machine's load).
	RedisCPU, BaselineRedisCPU time.Duration
}

// Ratio is Ours/Baseline.
func (m KafkaMeasurement) Ratio() float64 { return ratio(m.Ours, m.Baseline) }

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// Print implements bench.Printer: a table, then
//
//	RESULT index.kafka ours=<events/s> baseline=<events/s> ratio=<x> redis_cpu_us=… baseline_redis_cpu_us=…
//	RESULT index.kafka_steady ours=<events/s> baseline=<events/s> ratio=<x> p50_ms=… p99_ms=… baseline_p50_ms=… baseline_p99_ms=…
func (m KafkaMeasurement) Print(w io.Writer) error {
	p := func(l []time.Duration, q float64) float64 {
		return float64(bench.Percentile(l, q)) / float64(time.Millisecond)
	}
	lines := []string{
		fmt.Sprintf("%d events in %d Canal flat messages", m.Events, m.Records),
		fmt.Sprintf("%-20s ours %10.0f/s   baseline %10.0f/s", "index.kafka", m.Ours, m.Baseline),
		fmt.Sprintf("%-20s ours %10.0f/s   baseline %10.0f/s", "index.kafka_steady", m.SteadyOurs, m.SteadyBaseline),
		fmt.Sprintf("%-20s ours p50 %.2f ms p99 %.2f ms   baseline p50 %.2f ms p99 %.2f ms", "produce→applied",
			p(m.Latency, 50), p(m.Latency, 99), p(m.BaselineLatency, 50), p(m.BaselineLatency, 99)),
		fmt.Sprintf("%-20s ours %.1f µs/event   baseline %.1f µs/event", "redis cpu", us(m.RedisCPU), us(m.BaselineRedisCPU)),
		fmt.Sprintf("RESULT index.kafka ours=%.0f baseline=%.0f ratio=%.2f redis_cpu_us=%.1f baseline_redis_cpu_us=%.1f",
			m.Ours, m.Baseline, m.Ratio(), us(m.RedisCPU), us(m.BaselineRedisCPU)),
		fmt.Sprintf("RESULT index.kafka_steady ours=%.0f baseline=%.0f ratio=%.2f p50_ms=%.3f p99_ms=%.3f baseline_p50_ms=%.3f baseline_p99_ms=%.3f",
			m.SteadyOurs, m.SteadyBaseline, ratio(m.SteadyOurs, m.SteadyBaseline),
			p(m.Latency, 50), p(m.Latency, 99), p(m.BaselineLatency, 50), p(m.BaselineLatency, 99)),
	}
	return bench.PrintLines(w, lines)
}

// The bench's topics in its in-process cluster: one per implementation, each holding the same
// records.
const (
	oursTopic     = "bench.items.ours"
	baselineTopic = "bench.items.baseline"
)

// RunKafka benchmarks the CDC index fed from Kafka: an in-process kfake cluster, two topics
// holding the same Canal flat messages (canalStream), one consumed by ours (kafkasource.Source
// into an index.Indexer), the other by the baseline (baselineSink), on the same Redis. For each it measures the backlog (the whole stream waiting in the topic), the
// steady case (the stream produced again while the caught-up consumer runs) and the latency of
// single messages. The keys are removed at the end; the cluster, and so the topic, is closed.
func RunKafka(ctx context.Context, opts KafkaOptions) (*KafkaMeasurement, error) {
	if err := opts.Prepare("indexbench kafka", 1); err != nil {
		return nil, err
	}
	bench.Default(&opts.Events, 200000)
	bench.Default(&opts.Partitions, 8)
	bench.Default(&opts.RowsPerMessage, 10)
	bench.Default(&opts.Probes, 200)
	cluster := redisconn.IsCluster(opts.Client)
	prefix := bench.Namespace()
	defer opts.Cleanup(ctx, prefix, 2*time.Minute)
	if cluster {
		defer opts.Cleanup(ctx, "{"+prefix, 2*time.Minute)
	}

	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(int32(opts.Partitions), oursTopic, baselineTopic))
	if err != nil {
		return nil, fmt.Errorf("kfake: %w", err)
	}
	defer kc.Close()
	brokers := kc.ListenAddrs()
	prod, err := kgo.NewClient(kgo.SeedBrokers(brokers...),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(4<<20))
	if err != nil {
		return nil, err
	}
	defer prod.Close()

	stream := canalStream(opts.Events, opts.Partitions, opts.RowsPerMessage)
	events := 0
	for _, r := range stream {
		events += r.rows
	}
	m := &KafkaMeasurement{Events: events, Records: len(stream)}
	opts.Progressf("kafka: producing %d events in %d Canal flat messages to %d partitions of %s and of %s (kfake)\n",
		events, len(stream), opts.Partitions, oursTopic, baselineTopic)
	for _, topic := range []string{oursTopic, baselineTopic} {
		if err := produce(ctx, prod, topic, stream); err != nil {
			return nil, err
		}
	}

	ix, err := index.New(redisindex.New(opts.Client), []index.TableSpec{table(cluster)}, index.Options{Prefix: prefix + "-ours", Cluster: cluster})
	if err != nil {
		return nil, err
	}
	discard := slog.New(slog.DiscardHandler)
	// What serve does at start: a new table has no layout-1 keys and is marked layout 2.
	if err := ix.MigrateLayouts(ctx, discard); err != nil {
		return nil, err
	}
	src, err := kafkasource.New(ix, kafkasource.Options{Brokers: brokers, Topics: []string{oursTopic}, Group: prefix + "-ours", Logger: discard})
	if err != nil {
		return nil, err
	}
	ours := consumer{name: "ours", topic: oursTopic, run: src.Run, applied: src.Records.Load, failure: src.Failure}
	if err := ours.measure(ctx, opts, prod, stream, &m.Ours, &m.SteadyOurs, &m.RedisCPU, &m.Latency); err != nil {
		return m, err
	}
	if n := src.DeadLetters.Load(); n > 0 {
		return m, fmt.Errorf("ours: %d records dead-lettered", n)
	}
	if st := ix.Stats("bench", "items"); st.Failed.Load() > 0 {
		return m, fmt.Errorf("ours: %d changes failed", st.Failed.Load())
	}

	sink := newBaselineSink(opts.Client, brokers, baselineTopic, prefix+"-base", table(cluster), index.NewKeys(redstate.Prefix("", prefix+"-base"), "bench", "items", cluster))
	base := consumer{name: "baseline", topic: baselineTopic, run: sink.run, applied: sink.records.Load, failure: sink.failure}
	err = base.measure(ctx, opts, prod, stream, &m.Baseline, &m.SteadyBaseline, &m.BaselineRedisCPU, &m.BaselineLatency)
	return m, err
}

// consumer is one implementation under test: run consumes topic until its context ends;
// applied counts the records applied; failure describes its last failure ("" when none).
type consumer struct {
	name    string
	topic   string
	run     func(ctx context.Context) error
	applied func() int64
	failure func() string
}

// measure runs c over its topic, which holds stream: the backlog (events/s into *backlog, the
// server's CPU per event into *cpu), the stream produced again while c runs (into *steady),
// then probes single messages (sorted latencies into *lat).
func (c consumer) measure(ctx context.Context, opts KafkaOptions, prod *kgo.Client, stream []kafkaRecord, backlog, steady *float64, cpu *time.Duration, lat *[]time.Duration) error {
	events := 0
	for _, r := range stream {
		events += r.rows
	}
	cpu0, err := redisconn.ServerCPU(ctx, opts.Client)
	if err != nil {
		return err
	}
	rctx, cancel := context.WithCancel(ctx)
	stopped := make(chan struct{})
	var runErr error
	start := time.Now()
	go func() {
		runErr = c.run(rctx)
		close(stopped)
	}()
	defer func() {
		cancel()
		<-stopped
	}()
	done := func() error { return runErr }
	target := int64(len(stream))
	if err := c.wait(ctx, opts, "backlog", target, stopped, done); err != nil {
		return err
	}
	elapsed := time.Since(start)
	cpu1, err := redisconn.ServerCPU(ctx, opts.Client)
	if err != nil {
		return err
	}
	*backlog = float64(events) / elapsed.Seconds()
	*cpu = (cpu1 - cpu0) / time.Duration(events)
	opts.Progressf("kafka/%s backlog: %d events in %s: %.0f events/s, Redis CPU %s/event\n", c.name, events, elapsed.Round(time.Millisecond), *backlog, *cpu)

	start = time.Now()
	if err := produce(ctx, prod, c.topic, stream); err != nil {
		return err
	}
	target += int64(len(stream))
	if err := c.wait(ctx, opts, "steady", target, stopped, done); err != nil {
		return err
	}
	elapsed = time.Since(start)
	*steady = float64(events) / elapsed.Seconds()
	opts.Progressf("kafka/%s steady: %d events produced and applied in %s: %.0f events/s\n", c.name, events, elapsed.Round(time.Millisecond), *steady)

	for i := range opts.Probes {
		r := stream[i%len(stream)]
		t0 := time.Now()
		if err := produce(ctx, prod, c.topic, []kafkaRecord{r}); err != nil {
			return err
		}
		target++
		if err := c.wait(ctx, opts, "", target, stopped, done); err != nil {
			return err
		}
		*lat = append(*lat, time.Since(t0))
	}
	slices.Sort(*lat)
	opts.Progressf("kafka/%s latency: p50 %s p99 %s over %d single-message probes\n", c.name,
		bench.Percentile(*lat, 50).Round(time.Microsecond), bench.Percentile(*lat, 99).Round(time.Microsecond), len(*lat))
	return nil
}

// stallTimeout ends a run whose consumer applies nothing for this long.
const stallTimeout = time.Minute

// wait polls c.applied until it reaches target, printing progress once a second when phase
// is not "". Errors: the consumer returned, applied nothing for stallTimeout, or ctx ended.
// stopped is closed when the consumer returned, with done's error.
func (c consumer) wait(ctx context.Context, opts KafkaOptions, phase string, target int64, stopped <-chan struct{}, done func() error) error {
	last, lastAt, printed := c.applied(), time.Now(), time.Now()
	for {
		n := c.applied()
		if n >= target {
			return nil
		}
		now := time.Now()
		if n != last {
			last, lastAt = n, now
		}
		switch {
		case now.Sub(lastAt) > stallTimeout:
			return fmt.Errorf("%s: stalled at %d of %d records: %s", c.name, n, target, c.failure())
		case phase != "" && now.Sub(printed) >= time.Second:
			opts.Progressf("  kafka/%s %s: %d of %d records applied %s\n", c.name, phase, n, target, c.failure())
			printed = now
		}
		select {
		case <-stopped:
			return fmt.Errorf("%s stopped at %d of %d records: %v", c.name, n, target, done())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Microsecond):
		}
	}
}

// produce writes records to their partitions of topic and waits until all are acknowledged.
func produce(ctx context.Context, prod *kgo.Client, topic string, records []kafkaRecord) error {
	res := make(chan error, 1)
	for _, r := range records {
		prod.Produce(ctx, &kgo.Record{Topic: topic, Partition: r.partition, Value: r.value}, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case res <- err:
				default:
				}
			}
		})
	}
	if err := prod.Flush(ctx); err != nil {
		return err
	}
	select {
	case err := <-res:
		return fmt.Errorf("produce: %w", err)
	default:
		return nil
	}
}
