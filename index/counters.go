package index

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// TableRef names a declared table.
type TableRef struct {
	DB, Table string
}

// Counters are one table's change counts: Applied took effect, Stale were older than the stored
// version, Failed could not be converted (dead-lettered).
type Counters struct {
	Applied, Stale, Failed int64
}

// CounterSet is the index block's counters: per table, and block-wide the changes Skipped
// (undeclared tables, DDL) and the events Unreadable (could not be parsed at all).
type CounterSet struct {
	Tables              map[TableRef]Counters
	Skipped, Unreadable int64
}

// add adds d to c.
func (c *CounterSet) add(d CounterSet) {
	if c.Tables == nil {
		c.Tables = map[TableRef]Counters{}
	}
	for t, n := range d.Tables {
		cur := c.Tables[t]
		c.Tables[t] = Counters{Applied: cur.Applied + n.Applied, Stale: cur.Stale + n.Stale, Failed: cur.Failed + n.Failed}
	}
	c.Skipped += d.Skipped
	c.Unreadable += d.Unreadable
}

// empty reports whether c counts nothing.
func (c CounterSet) empty() bool { return len(c.Tables) == 0 && c.Skipped == 0 && c.Unreadable == 0 }

// DefaultCounterFlush is how often RunCounters adds this instance's counts to the shared ones.
const DefaultCounterFlush = 5 * time.Second

// counterLog holds the counts not yet added to the store.
type counterLog struct {
	mu      sync.Mutex
	pending CounterSet
}

func (l *counterLog) record(d CounterSet) {
	l.mu.Lock()
	l.pending.add(d)
	l.mu.Unlock()
}

func (l *counterLog) take() CounterSet {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.pending
	l.pending = CounterSet{}
	return p
}

func (l *counterLog) snapshot() CounterSet {
	l.mu.Lock()
	defer l.mu.Unlock()
	var c CounterSet
	c.add(l.pending)
	return c
}

// CountersKey is the hash the counters of every instance are added to (Store.AddCounters).
func (ix *Indexer) CountersKey() string { return ix.BlockKeys().Counters() }

// FlushCounters adds the counts recorded since the last flush to the store's shared counters;
// what fails stays pending for the next flush. Errors: EUNAVAILABLE.
func (ix *Indexer) FlushCounters(ctx context.Context) error {
	p := ix.counters.take()
	if p.empty() {
		return nil
	}
	if err := ix.store.AddCounters(ctx, ix.CountersKey(), p); err != nil {
		ix.counters.record(p)
		return err
	}
	return nil
}

// RunCounters flushes the counters every every (DefaultCounterFlush when 0) until ctx ends,
// then once more, and returns nil. Counts of a process that dies are lost since its last
// flush.
func (ix *Indexer) RunCounters(ctx context.Context, every time.Duration, log *slog.Logger) error {
	if every <= 0 {
		every = DefaultCounterFlush
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			defer cancel()
			if err := ix.FlushCounters(fctx); err != nil {
				log.Warn("index counters: last flush failed; counts since the previous one are lost", "err", err)
			}
			return nil
		case <-t.C:
			if err := ix.FlushCounters(ctx); err != nil {
				log.Warn("index counters flush failed; retrying with the next one", "err", err)
			}
		}
	}
}

// SharedCounters returns the counters of every instance sharing the store (as of their last
// flush) plus this instance's unflushed counts; every declared table is present.
// Errors: EUNAVAILABLE.
func (ix *Indexer) SharedCounters(ctx context.Context) (CounterSet, error) {
	stored, err := ix.store.Counters(ctx, ix.CountersKey())
	if err != nil {
		return CounterSet{}, err
	}
	var out CounterSet
	out.add(stored)
	out.add(ix.counters.snapshot())
	for _, n := range ix.order {
		t := ix.tables[n].spec
		ref := TableRef{DB: t.DB, Table: t.Table}
		if _, ok := out.Tables[ref]; !ok {
			out.Tables[ref] = Counters{}
		}
	}
	return out, nil
}

// CounterFields is c as the fields of the counters hash: "<db>/<table>/applied", ".../stale",
// ".../failed", "skipped" and "unreadable" ('/' cannot occur in a database or table name);
// zero counts are left out.
func CounterFields(c CounterSet) map[string]int64 {
	f := map[string]int64{}
	put := func(name string, n int64) {
		if n != 0 {
			f[name] = n
		}
	}
	for t, n := range c.Tables {
		base := t.DB + "/" + t.Table + "/"
		put(base+"applied", n.Applied)
		put(base+"stale", n.Stale)
		put(base+"failed", n.Failed)
	}
	put("skipped", c.Skipped)
	put("unreadable", c.Unreadable)
	return f
}

// ParseCounterFields is the inverse of CounterFields; fields it does not recognize are
// ignored.
func ParseCounterFields(fields map[string]int64) CounterSet {
	c := CounterSet{Tables: map[TableRef]Counters{}}
	for name, n := range fields {
		switch name {
		case "skipped":
			c.Skipped = n
			continue
		case "unreadable":
			c.Unreadable = n
			continue
		}
		parts := strings.Split(name, "/")
		if len(parts) != 3 {
			continue
		}
		ref := TableRef{DB: parts[0], Table: parts[1]}
		cur := c.Tables[ref]
		switch parts[2] {
		case "applied":
			cur.Applied = n
		case "stale":
			cur.Stale = n
		case "failed":
			cur.Failed = n
		default:
			continue
		}
		c.Tables[ref] = cur
	}
	return c
}
