// Package historyblock runs the statistics history as a component of a process: one Recorder
// (the process's one writer, which the root hands to every block in component.Env.History)
// flushing once per second to Redis under the namespace, or to process memory without Redis,
// and one Reader for the HTTP API.
package historyblock

import (
	"context"
	"fmt"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/component"
	"github.com/redstate/redstate/history"
)

// Name is the component's name in Health, logs and the overview.
const Name = "stats"

// Block is the running history: its recorder's flush loop.
type Block struct {
	backend  string
	recorder *history.Recorder
	reader   *history.Reader
	store    history.Store
	usage    *history.UsageMeter
	bg       component.Background
}

// Open builds the history on env: a RedisStore under env.Namespace with Redis, a MemoryStore
// without. With cfg.Enabled false it returns a block whose Recorder and Reader are nil.
// Errors: EINVALID (cfg).
func Open(_ context.Context, env component.Env, cfg history.Config) (*Block, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	b := &Block{backend: component.BackendMemory}
	if !cfg.Enabled {
		return b, nil
	}
	b.store = history.NewMemoryStore(nil)
	if env.Redis != nil {
		b.backend = component.BackendRedis
		b.store = history.NewRedisStore(env.Redis, history.NewKeys(redstate.Prefix(env.Namespace, "")), nil)
	}
	rec, err := history.NewRecorder(history.Options{Store: b.store, MaxSeries: cfg.MaxSeries, Logger: env.Logger()})
	if err != nil {
		return nil, err
	}
	b.recorder, b.reader, b.usage = rec, history.NewReader(b.store, nil), history.NewUsageMeter(b.store)
	history.RegisterMetrics(env.Metrics, rec, b.usage)
	return b, nil
}

// Recorder is the process's one writer (nil when off): hand it to the blocks in
// component.Env.History.
func (b *Block) Recorder() *history.Recorder { return b.recorder }

// Reader answers the stats routes (nil when off).
func (b *Block) Reader() *history.Reader { return b.reader }

// Name is "stats".
func (b *Block) Name() string { return Name }

// Start runs the recorder's flush loop.
func (b *Block) Start(ctx context.Context) error {
	if b.recorder != nil {
		b.bg.Go(ctx, func(ctx context.Context) { b.recorder.Run(ctx) })
	}
	return nil
}

// Close stops the flush loop after one last flush.
func (b *Block) Close(ctx context.Context) error { return b.bg.Stop(ctx) }

// healthUsageWait bounds measuring the history's size for Health.
const healthUsageWait = 500 * time.Millisecond

// Health reports the backend, the series written, the history's size (measured at most once a
// minute) and the events dropped; writes failing degrade the component (the blocks it records
// for are not affected).
func (b *Block) Health(ctx context.Context) component.Status {
	if b.recorder == nil {
		return component.Status{Name: Name, Backend: b.backend, State: component.StateOff, Detail: "stats.history.enabled is false"}
	}
	st := b.recorder.Stats()
	s := component.Status{Name: Name, Backend: b.backend, State: component.StateOK,
		Detail: fmt.Sprintf("%d of at most %d series", st.Series, st.MaxSeries)}
	uctx, cancel := context.WithTimeout(ctx, healthUsageWait)
	defer cancel()
	if u, ok := b.usage.Usage(uctx); ok {
		s.Detail += fmt.Sprintf(", %d keys, %.1f MB", u.Buckets, float64(u.Bytes)/1e6)
	}
	s.Detail += fmt.Sprintf("; %d events dropped", st.Dropped)
	if b.recorder.Failing() {
		s.State = component.StateDegraded
		s.Detail = "writing the history fails: events are dropped (and counted) until it works again; " + s.Detail
	}
	return s
}
