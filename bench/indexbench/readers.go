package indexbench

import (
	"context"
	"fmt"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/mysqlsource"
	"github.com/redstate/redstate/index/redisindex"
	"github.com/redstate/redstate/internal/rediserr"
)

// reader is one implementation streaming the binary log into Redis.
type reader interface {
	// applied is the position up to which every change is in Redis (zero before any).
	applied() mysqlsource.Position
	// changes counts the row changes applied.
	changes() int64
}

// ours is the reader of index/mysqlsource.
type ours struct {
	src *mysqlsource.Source
	ix  *index.Indexer
}

func (o ours) applied() mysqlsource.Position { return o.src.Position() }
func (o ours) changes() int64                { return o.src.Events.Load() }

// Implementations.
const (
	implOurs     = "ours"
	implTransfer = "transfer"
)

// running is a started reader.
type running struct {
	reader
	cancel context.CancelFunc
	// done receives the reader's end; ended and err hold it once received.
	done  chan error
	ended bool
	err   error
	// warm is the position of the warm-up transaction once applied (warmUp).
	warm mysqlsource.Position
}

// wait returns done's value, received once.
func (r *running) wait() error {
	if !r.ended {
		r.err, r.ended = <-r.done, true
	}
	return r.err
}

// stop ends the reader and returns its error.
func (r *running) stop() error {
	r.cancel()
	return r.wait()
}

// start runs impl under key prefix prefix from position from, until stopped.
func (e *mysqlEnv) start(ctx context.Context, impl, prefix string, from mysqlsource.Position) (*running, error) {
	rctx, cancel := context.WithCancel(ctx)
	r := &running{cancel: cancel, done: make(chan error, 1)}
	client := e.opts.Client
	if impl == implTransfer {
		t := &transfer{client: client, keys: index.NewKeys(redstate.Prefix("", prefix), e.spec.DB, e.spec.Table, e.spec.HashTag), spec: e.spec,
			posKey: prefix + ":position", batch: e.opts.Batch, columns: []string{"id", "lastAddrId", "categoryId", "brandId", "name", "yn"}}
		r.reader = t
		go func() { r.done <- t.run(rctx, e.syncerConfig(), from) }()
		return r, nil
	}
	ix, err := index.New(redisindex.New(client), []index.TableSpec{e.spec}, index.Options{Prefix: prefix, Cluster: e.cluster})
	if err == nil { // what serve does at start: a new table has no layout-1 keys and is marked layout 2
		err = ix.MigrateLayouts(ctx, e.log)
	}
	if err != nil {
		cancel()
		return nil, err
	}
	src, err := mysqlsource.New(ix, mysqlsource.Options{URL: e.opts.URL, DB: e.db, Redis: client, Tables: []string{e.spec.DB + "." + e.spec.Table},
		Flavor: e.flavor, BatchRows: e.opts.Batch, Logger: e.log})
	if err != nil {
		cancel()
		return nil, err
	}
	// A recorded position makes the source stream from it, without a snapshot.
	if err := client.Set(ctx, src.Keys().Position, from.String(), 0).Err(); err != nil {
		cancel()
		return nil, rediserr.Map(err, "bench: set the source's position")
	}
	r.reader = ours{src: src, ix: ix}
	go func() { r.done <- src.Run(rctx) }()
	return r, nil
}

// stallLimit is how long a reader may apply nothing before the bench gives up on it (it
// retries failures meanwhile, logged on stderr).
const stallLimit = time.Minute

// await waits until r has applied end, checking every millisecond and printing progress to
// stderr every second, and returns the time since t0. It fails when r applies nothing for
// stallLimit, stops, or ctx ends.
func (e *mysqlEnv) await(ctx context.Context, name string, r *running, end mysqlsource.Position, t0 time.Time, total int) (time.Duration, error) {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	lastReport, lastChange, lastCount := time.Now(), time.Now(), r.changes()
	for {
		if reached(r.applied(), end) {
			d := time.Since(t0)
			e.opts.Progressf("  %s: %d row changes applied in %s (%.0f/s)\n", name, r.changes(), d.Round(time.Millisecond), float64(total)/d.Seconds())
			return d, nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case err := <-r.done:
			r.err, r.ended = err, true
			return 0, fmt.Errorf("%s stopped at %s (end %s): %v", name, r.applied(), end, err)
		case now := <-tick.C:
			if n := r.changes(); n != lastCount {
				lastCount, lastChange = n, now
			} else if now.Sub(lastChange) > stallLimit {
				return 0, fmt.Errorf("%s: no change applied for %s at %s (end %s)", name, stallLimit, r.applied(), end)
			}
			if now.Sub(lastReport) >= time.Second {
				lastReport = now
				e.opts.Progressf("  %s: %d of %d row changes applied in %.0fs\n", name, lastCount, total, now.Sub(t0).Seconds())
			}
		}
	}
}
