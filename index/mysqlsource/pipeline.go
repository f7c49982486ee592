package mysqlsource

import (
	"context"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"
)

// Read/apply structure of the stream: three goroutines, order kept end to end.
//
//	events   the syncer's events (decoded by go-mysql's own goroutine), read ahead up to
//	         readAhead
//	reader   turns row events into changes (handle) and gathers them into a batch
//	applier  applies one batch at a time (flush: Indexer.Apply, then the position)
//
// The reader hands its batch over as soon as the applier is free, so the next batch is decoded
// and converted while the previous one is in Redis, and batches size themselves: one
// transaction at a time when the log is quiet (low lag), up to BatchRows when the applier is
// the bottleneck (fewer round trips). Batches are applied one after the other in log order,
// so a row's changes are applied in order, and a batch's position (the end of the last
// complete transaction read before it was handed over) is recorded only after its changes,
// and every earlier batch's, are applied. A batch that carries no change (a transaction of
// tables not followed, rows skipped) is handed over at most every positionEvery, so a busy
// server's other tables do not cost a position write per transaction.

// readAhead bounds the events read from the syncer ahead of the reader.
const readAhead = 256

// positionEvery is how often at most a batch without changes (only a newer position or
// skipped rows) is handed over; also how long the log may be quiet before the position of
// skipped transactions is recorded.
const positionEvery = 20 * time.Millisecond

// pipeline runs the reader and the applier on st from `from` until ctx ends (nil), the
// stream fails or a batch cannot be applied (that error). The batch being applied when it
// ends is finished (or abandoned when ctx ended); nothing after it is recorded.
func (s *Source) pipeline(ctx context.Context, st *replication.BinlogStreamer, from Position, progressed *bool) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events := make(chan *replication.BinlogEvent, readAhead)
	readErr := make(chan error, 1)
	go func() {
		for {
			ev, err := st.GetEvent(ctx)
			if err != nil {
				readErr <- err
				return
			}
			select {
			case events <- ev:
			case <-ctx.Done():
				readErr <- ctx.Err()
				return
			}
		}
	}()
	work := make(chan *batch) // unbuffered: a send succeeds only when the applier is free
	applyErr := make(chan error, 1)
	applierDone := make(chan struct{})
	go func() {
		defer close(applierDone)
		recorded := from
		for b := range work {
			b.recorded = recorded
			if err := s.flush(ctx, b); err != nil {
				applyErr <- err
				return
			}
			recorded = b.recorded
			*progressed = true
		}
	}()
	err := s.read(ctx, events, readErr, work, applyErr, from)
	close(work)
	<-applierDone
	return err
}

// read is the reader: it takes events into a batch and hands batches over to work (see
// pipeline).
func (s *Source) read(ctx context.Context, events <-chan *replication.BinlogEvent, readErr <-chan error,
	work chan<- *batch, applyErr <-chan error, from Position) error {
	// b.recorded is the position of the last batch handed over.
	b := &batch{file: from.File, committed: from, recorded: from}
	tick := time.NewTicker(positionEvery)
	defer tick.Stop()
	positionDue := false
	take := func(ev *replication.BinlogEvent) error { return s.handle(ctx, ev, b) }
	for {
		in := events
		if len(b.changes) < s.opts.BatchRows {
			// Events already read come first: a batch goes early only when the log has
			// nothing more for now.
			select {
			case ev := <-events:
				if err := take(ev); err != nil {
					return err
				}
				continue
			default:
			}
		} else {
			in = nil // full: wait for the applier
		}
		var hand chan<- *batch
		var out *batch
		if len(b.changes) > 0 || (positionDue && b.dirty()) {
			hand = work
			out = &batch{committed: b.committed, changes: b.changes, skipped: b.skipped, last: b.last}
		}
		select {
		case ev := <-in:
			if err := take(ev); err != nil {
				return err
			}
		case hand <- out:
			b.changes, b.skipped, b.recorded, positionDue = nil, 0, b.committed, false
		case <-tick.C:
			positionDue = true
		case err := <-readErr:
			if ctx.Err() != nil {
				return nil
			}
			return s.mapStreamError(err, b.committed)
		case err := <-applyErr:
			return err
		case <-ctx.Done():
			return nil
		}
	}
}
