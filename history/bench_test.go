package history_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/history"
	"github.com/redstate/redstate/redisconn"
	"github.com/redstate/redstate/redistest"
)

// BenchmarkRecorder_Add is the cost of recording one event on a block's hot path.
func BenchmarkRecorder_Add(b *testing.B) {
	rec, err := history.NewRecorder(history.Options{Store: history.NewMemoryStore(nil)})
	if err != nil {
		b.Fatal(err)
	}
	queues := []string{"a", "b", "c", "d"}
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			rec.Add(history.QueueDone, 1, queues[i%len(queues)])
			i++
		}
	})
}

// BenchmarkRecorder_Observe is the cost of recording one latency.
func BenchmarkRecorder_Observe(b *testing.B) {
	rec, err := history.NewRecorder(history.Options{Store: history.NewMemoryStore(nil)})
	if err != nil {
		b.Fatal(err)
	}
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			rec.Observe(history.QueueLatency, 0.02, "q")
		}
	})
}

// BenchmarkRedisFlush is one second's flush (Run's tick: the 1 s bucket, and a coarser bucket
// when one ends) of a busy process with 20 queues (enqueued, done, failed, 4 latency buckets and
// 5 sizes each: 240 fields) to a standalone Redis, reporting the server's time per flush (INFO
// commandstats) and the bytes of one bucket of each tier.
func BenchmarkRedisFlush(b *testing.B) {
	client := redistest.SharedStandalone(b).Client(b)
	keys := history.NewKeys(redstate.Prefix("bench-", ""))
	sec := time.Now().Unix()
	clock := func() time.Time { return time.Unix(sec, 0) }
	rec, err := history.NewRecorder(history.Options{Store: history.NewRedisStore(client, keys, clock), Now: clock})
	if err != nil {
		b.Fatal(err)
	}
	record := func() {
		for q := range 20 {
			name := fmt.Sprintf("queue-%02d", q)
			rec.Add(history.QueueEnqueued, 10, name)
			rec.Add(history.QueueDone, 9, name)
			rec.Add(history.QueueFailed, 1, name)
			for _, l := range []float64{0.004, 0.02, 0.3, 2} {
				rec.Observe(history.QueueLatency, l, name)
			}
			for _, s := range []string{"pending", "scheduled", "active", "retrying", "dead"} {
				rec.Set(history.QueueSize, 3, name, s)
			}
		}
	}
	ctx := b.Context()
	record()
	if err := rec.Flush(ctx); err != nil { // registers the series
		b.Fatal(err)
	}
	before, err := redisconn.ReadCommandStats(ctx, client)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		sec++
		record()
		if err := rec.Flush(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	after, err := redisconn.ReadCommandStats(ctx, client)
	if err != nil {
		b.Fatal(err)
	}
	if err := rec.FlushAll(ctx); err != nil { // the open coarse buckets, to measure them
		b.Fatal(err)
	}
	d := after.Sub(before)
	var usec, calls int64
	for name, c := range d {
		if name == "info" {
			continue
		}
		usec, calls = usec+c.Usec, calls+c.Calls
	}
	b.ReportMetric(float64(usec)/float64(b.N), "server-µs/flush")
	b.Log(d.String())
	b.ReportMetric(float64(calls)/float64(b.N), "commands/flush")
	for _, t := range history.Tiers {
		n, err := client.MemoryUsage(ctx, keys.Bucket(t, t.Start(sec)), 0).Result()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(n), "bytes/"+t.StepString()+"-bucket")
	}
}

// BenchmarkRedisReadLargest is the largest read MaxFieldReads allows, on full buckets: 15 latency
// series (22 histogram fields each) over 24 h, every 1 min bucket holding them.
func BenchmarkRedisReadLargest(b *testing.B) {
	client := redistest.SharedStandalone(b).Client(b)
	keys := history.NewKeys(redstate.Prefix("benchread-", ""))
	now := time.Now()
	store := history.NewRedisStore(client, keys, func() time.Time { return now })
	ctx := b.Context()
	day := history.Tiers[2]
	from, to := day.Span(now)
	seen := map[string]int64{}
	for start := from; start <= to; start += day.Step {
		var batch history.Batch
		for q := range 15 {
			series := fmt.Sprintf("%s\x1fqueue-%02d", history.QueueLatency, q)
			seen[series] = now.Unix()
			for i := range len(history.Bounds) + 1 {
				batch.Counts = append(batch.Counts, history.Count{Second: start, Field: fmt.Sprintf("%s\x1e%d", series, i), N: 1})
			}
		}
		batch.Up, batch.Tiers = []int64{start}, []int{2}
		if err := store.Write(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	if err := store.Write(ctx, history.Batch{Seen: seen, Tiers: []int{}}); err != nil {
		b.Fatal(err)
	}
	reader := history.NewReader(store, func() time.Time { return now })
	before, err := redisconn.ReadCommandStats(ctx, client)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		res, err := reader.Read(ctx, history.Query{Metrics: []string{"queue.latency.p50", "queue.latency.p99"}, Window: "24h"})
		if err != nil || len(res.Series) != 30 {
			b.Fatalf("read: %v, %d series", err, len(res.Series))
		}
	}
	b.StopTimer()
	after, err := redisconn.ReadCommandStats(ctx, client)
	if err != nil {
		b.Fatal(err)
	}
	d := after.Sub(before)
	b.ReportMetric(float64(d["hmget"].Usec+d["hgetall"].Usec)/float64(b.N), "server-µs/read")
	b.Log(d.String())
}
