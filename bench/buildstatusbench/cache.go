package buildstatusbench

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redstate/redstate/bench"
	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/buildstatus/redisstore"
	"github.com/redstate/redstate/redisconn"
)

// Staleness is how long after a save's acknowledgement another instance's client-side cache
// still held the previous version (until Redis's invalidation was applied): one sample per
// save.
type Staleness struct {
	// Samples are the measured delays, sorted.
	Samples []time.Duration
	// Writers is the number of concurrent writers.
	Writers int
}

// ResultLine formats s as
//
//	RESULT buildstatus.cache_staleness samples=<n> writers=<n> p50_ms=… p99_ms=… p999_ms=… max_ms=…
func (s Staleness) ResultLine() string {
	p := func(q float64) float64 { return float64(bench.Percentile(s.Samples, q)) / float64(time.Millisecond) }
	return fmt.Sprintf("RESULT buildstatus.cache_staleness samples=%d writers=%d p50_ms=%.3f p99_ms=%.3f p999_ms=%.3f max_ms=%.3f",
		len(s.Samples), s.Writers, p(50), p(99), p(99.9), p(100))
}

// Memory is the heap a cached build costs.
type Memory struct {
	// Entries is how many builds were cached.
	Entries int
	// ValueBytes is the mean size of a stored document.
	ValueBytes int
	// BytesPerEntry is the heap growth per cached build (document, key and the cache's own
	// bookkeeping).
	BytesPerEntry int
}

// ResultLine formats m as
//
//	RESULT buildstatus.cache_memory entries=<n> value_bytes=<n> bytes_per_entry=<n>
func (m Memory) ResultLine() string {
	return fmt.Sprintf("RESULT buildstatus.cache_memory entries=%d value_bytes=%d bytes_per_entry=%d", m.Entries, m.ValueBytes, m.BytesPerEntry)
}

// Report is a run's comparisons plus, with the client-side cache, its staleness and memory.
type Report struct {
	// Comparisons are the timed operations, ours vs raw.
	Comparisons bench.Comparisons
	// Staleness is nil unless measured.
	Staleness *Staleness
	// Memory is nil unless measured.
	Memory *Memory
	// Dapr is nil unless save_vs_dapr was measured.
	Dapr *DaprSave
}

// Print implements bench.Printer: the comparisons' table and lines, then the comparison with
// Dapr (its commands per side, then its line) and the cache's lines.
func (r *Report) Print(w io.Writer) error {
	if err := r.Comparisons.Print(w); err != nil {
		return err
	}
	var lines []string
	if r.Dapr != nil {
		lines = append(lines, r.Dapr.CommandLines()...)
		lines = append(lines, r.Dapr.ResultLine())
	}
	if r.Staleness != nil {
		lines = append(lines, r.Staleness.ResultLine())
	}
	if r.Memory != nil {
		lines = append(lines, r.Memory.ResultLine())
	}
	return bench.PrintLines(w, lines)
}

// newInstance returns a store on the bench's client reading through a cache of its own, as a
// second redstate process would; close releases both.
func (w *workload) newInstance() (store *redisstore.Store, cache *redisconn.Cache, close func(), err error) {
	o := w.opts.Redis
	o.ClientCache.Enabled = true
	if cache, err = redisconn.NewCache(o); err != nil {
		return nil, nil, nil, err
	}
	store, err = redisstore.New(w.opts.Client, redisstore.Options{Keys: w.keys, TTL: w.opts.TTL, Cache: cache})
	if err != nil {
		_ = cache.Close()
		return nil, nil, nil, err
	}
	return store, cache, func() { _ = store.Close(); _ = cache.Close() }, nil
}

// staleness measures, for opts.Duration, opts.Clients writers each saving its own builds
// through the bench's store (this instance) while a second instance has them cached. A sample
// is the time from a save's acknowledgement to the moment the second instance's cache dropped
// the old version (its invalidation callback; 0 when that came first), after which the
// second instance must serve the new version.
func (w *workload) staleness(ctx context.Context) (*Staleness, error) {
	reader, cache, closeReader, err := w.newInstance()
	if err != nil {
		return nil, err
	}
	defer closeReader()
	waits := &invalidationWaits{byKey: map[string]chan time.Time{}}
	cache.OnInvalidate(waits.invalidated)
	defer cache.OnInvalidate(nil)
	writers := w.opts.Clients
	w.opts.Progressf("cache staleness: %d writers, %s\n", writers, w.opts.Duration)
	var mu sync.Mutex
	var samples []time.Duration
	var failed atomic.Value
	deadline := time.Now().Add(w.opts.Duration)
	var wg sync.WaitGroup
	for c := range writers {
		wg.Go(func() {
			var mine []time.Duration
			defer func() { mu.Lock(); samples = append(samples, mine...); mu.Unlock() }()
			for round := 0; time.Now().Before(deadline) && ctx.Err() == nil; round++ {
				i := (c + round*writers) % len(w.ids)
				d, err := w.staleOnce(ctx, reader, waits, i, round)
				if err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
				mine = append(mine, d)
			}
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		return nil, err
	}
	slices.Sort(samples)
	return &Staleness{Samples: samples, Writers: writers}, nil
}

// invalidationWaits hands each invalidated key's time to the writer waiting for it.
type invalidationWaits struct {
	mu    sync.Mutex
	byKey map[string]chan time.Time
}

// expect returns the channel that receives key's next invalidation time.
func (iw *invalidationWaits) expect(key string) chan time.Time {
	ch := make(chan time.Time, 1)
	iw.mu.Lock()
	iw.byKey[key] = ch
	iw.mu.Unlock()
	return ch
}

// invalidated is the cache's invalidation callback.
func (iw *invalidationWaits) invalidated(key string) {
	at := time.Now()
	iw.mu.Lock()
	ch, ok := iw.byKey[key]
	delete(iw.byKey, key)
	iw.mu.Unlock()
	if ok {
		ch <- at
	}
}

// staleWaitLimit bounds one sample: an invalidation still not received after it is an error.
const staleWaitLimit = 10 * time.Second

// staleOnce caches build i in reader, saves a new version through the bench's store and
// returns how long after the acknowledgement reader's cache still held the old one.
func (w *workload) staleOnce(ctx context.Context, reader *redisstore.Store, waits *invalidationWaits, i, round int) (time.Duration, error) {
	id := w.ids[i]
	for range 2 { // the second read is served from reader's cache
		if _, err := reader.Get(ctx, id); err != nil {
			return 0, err
		}
	}
	doc := *w.docs[i]
	doc.Status = fmt.Sprintf("ROUND_%d", round)
	invalidated := waits.expect(w.buildKs[i])
	saved, err := w.store.Save(ctx, &doc, buildstatus.SaveOptions{})
	if err != nil {
		return 0, err
	}
	acked := time.Now()
	var stale time.Duration
	select {
	case at := <-invalidated:
		stale = max(at.Sub(acked), 0)
	case <-time.After(staleWaitLimit):
		return 0, fmt.Errorf("build %s: no invalidation reached the second instance %s after the save", id, staleWaitLimit)
	}
	got, err := reader.Get(ctx, id)
	if err != nil {
		return 0, err
	}
	if got.ETag() != saved.ETag() {
		return 0, fmt.Errorf("build %s: the second instance serves ETag %s after its invalidation, want the saved %s", id, got.ETag(), saved.ETag())
	}
	return stale, nil
}

// memory caches every seeded build in a fresh instance's cache and reports the heap growth
// per build.
func (w *workload) memory(ctx context.Context) (*Memory, error) {
	reader, cache, closeReader, err := w.newInstance()
	if err != nil {
		return nil, err
	}
	defer closeReader()
	if _, err := reader.Get(ctx, w.ids[0]); err != nil { // connect before measuring
		return nil, err
	}
	before := heapInUse()
	if err := w.readAll(ctx, reader); err != nil {
		return nil, err
	}
	after := heapInUse()
	if st := cache.Stats(); st.Misses < int64(len(w.ids)) {
		return nil, fmt.Errorf("cache memory: only %d of %d builds were read into the cache", st.Misses, len(w.ids))
	}
	total := 0
	for _, e := range w.encoded {
		total += len(e)
	}
	return &Memory{Entries: len(w.ids), ValueBytes: total / len(w.ids), BytesPerEntry: int(max(after-before, 0)) / len(w.ids)}, nil
}

// readAll reads every seeded build through store, MaxBatch at a time.
func (w *workload) readAll(ctx context.Context, store *redisstore.Store) error {
	for start := 0; start < len(w.ids); start += buildstatus.MaxBatch {
		if _, err := store.GetMany(ctx, w.ids[start:min(start+buildstatus.MaxBatch, len(w.ids))]); err != nil {
			return err
		}
	}
	return nil
}

// heapInUse returns the live heap after a full collection.
func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
