// Package history keeps the statistics history the dashboard draws: fixed-size time series of
// the blocks' counters (jobs done per second), gauges (queue sizes, lags) and latency
// distributions (job latency p50/p99), shared by every instance of a deployment and kept across
// restarts.
//
// Every process has one Recorder. The blocks hand it their events (Add, Set, Observe): a
// Recorder only counts them in process memory, so recording costs a map update and never a
// round trip. Once per second (Run) it writes what it counted to its Store in one batch: with
// Redis one pipeline (RedisStore), without Redis process memory (MemoryStore). A failed write is
// dropped and counted (Stats), so a Redis outage never blocks or fails a block's operation.
//
// The store keeps three tiers of buckets, each a fixed number of buckets (Tiers): one per second
// for 15 minutes, one per 10 seconds for an hour and one per minute for a day, exactly the
// resolutions the three windows of a Read answer (15m, 1h, 24h). Every instance adds its own
// counts into the same buckets, so a read sums the instances; a gauge is written with "last write
// wins" per bucket, so a gauge every instance reads from shared state (a queue's size) is never
// multiplied by the number of instances; a latency is counted into fixed histogram buckets
// (Bounds), summed across instances, and its quantiles are computed when read.
//
// A Reader answers the dashboard's questions: a window, metrics and label filters give one time
// axis shared by every series (Result), the shape uPlot draws.
package history
