package mysqlsource

import (
	"context"
	"database/sql"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/sqldb"
)

// LagPoll is how often a streaming source reads the sizes of the server's binary logs (for
// LagBytes) and measures its events per second.
const LagPoll = 2 * time.Second

// progress holds the figures the metrics and the dashboard read, beside the Source's
// exported counters.
type progress struct {
	// pending counts the row changes read from the log and not yet applied.
	pending atomic.Int64
	// estimate is the snapshot's expected row count; streaming is set while the binlog stream
	// is open, done once the snapshot is complete (or was before this process started).
	estimate        atomic.Int64
	streaming, done atomic.Bool
	// rate is the events per second over the last LagPoll (float64 bits).
	rate atomic.Uint64
	// logs are the server's binary logs as last listed.
	logs atomic.Pointer[[]binlogFile]
}

// binlogFile is one of the server's binary logs: its number and size in bytes.
type binlogFile struct {
	number uint32
	size   int64
}

// LagBytes is the size of the binary log between the last applied position and the server's
// end, summed across files, as of the last listing (every LagPoll while streaming; 0 before
// the first). It counts every event the server logged, the followed tables' or not.
func (s *Source) LagBytes() int64 {
	logs, at := s.progress.logs.Load(), s.Position()
	if logs == nil || at.File == "" {
		return 0
	}
	n, err := index.BinlogFileNumber(at.File)
	if err != nil {
		return 0
	}
	var lag int64
	for _, f := range *logs {
		switch {
		case f.number == n:
			lag += max(0, f.size-int64(at.Pos))
		case f.number > n:
			lag += f.size
		}
	}
	return lag
}

// PendingEvents is the number of row changes of followed tables read from the binary log and
// held in the current batch, not yet applied (what the server has logged but not yet sent is
// in LagBytes, not here).
func (s *Source) PendingEvents() int64 { return s.progress.pending.Load() }

// EventsPerSecond is the rate of applied row changes over the last LagPoll (0 when not
// streaming).
func (s *Source) EventsPerSecond() float64 { return math.Float64frombits(s.progress.rate.Load()) }

// Streaming reports whether the source is reading the binary log now.
func (s *Source) Streaming() bool { return s.progress.streaming.Load() }

// SnapshotEstimate is the expected number of rows of the snapshot: the sum of the followed
// tables' information_schema.TABLES.TABLE_ROWS (an InnoDB estimate) when this process started
// one, 0 otherwise.
func (s *Source) SnapshotEstimate() int64 { return s.progress.estimate.Load() }

// SnapshotPercent is the snapshot's progress: SnapshotRows against SnapshotEstimate, capped at
// 99.9 until the snapshot is complete, then 100.
func (s *Source) SnapshotPercent() float64 {
	if s.progress.done.Load() {
		return 100
	}
	est := s.progress.estimate.Load()
	if est <= 0 {
		return 0
	}
	return min(99.9, 100*float64(s.SnapshotRows.Load())/float64(est))
}

// estimateSnapshot records the followed tables' estimated row count (best effort: an
// unreadable estimate leaves 0).
func (s *Source) estimateSnapshot(ctx context.Context) {
	var total int64
	for t := range s.followed {
		db, name, _ := strings.Cut(t, ".")
		var n sql.NullInt64
		err := s.opts.DB.QueryRowContext(ctx, "SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", db, name).Scan(&n)
		if err != nil {
			s.log.Warn("snapshot: cannot estimate the rows of a table", "table", t, "err", sqldb.Map(err, "information_schema.TABLES"))
			continue
		}
		total += n.Int64
	}
	s.progress.estimate.Store(total)
}

// watch marks the source streaming and, until the returned function is called, lists the
// server's binary logs and measures the events per second every LagPoll.
func (s *Source) watch(ctx context.Context) (stop func()) {
	s.progress.done.Store(true)
	s.progress.streaming.Store(true)
	ctx, cancel := context.WithCancel(ctx)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(LagPoll)
		defer tick.Stop()
		events, at := s.Events.Load(), time.Now()
		for {
			if logs, err := s.binaryLogs(ctx); err == nil {
				s.progress.logs.Store(&logs)
				if s.LagBytes() == 0 && s.PendingEvents() == 0 {
					s.lagMillis.Store(0) // caught up: the last event's age is no lag
				}
			} else if ctx.Err() == nil {
				s.log.Debug("lag: cannot list the binary logs", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			n, now := s.Events.Load(), time.Now()
			s.progress.rate.Store(math.Float64bits(float64(n-events) / now.Sub(at).Seconds()))
			events, at = n, now
		}
	}()
	return func() {
		cancel()
		<-finished
		s.progress.streaming.Store(false)
		s.progress.rate.Store(0)
		s.progress.pending.Store(0)
	}
}

// binaryLogs lists the server's binary logs and their sizes (SHOW BINARY LOGS, on MySQL 8.4
// too; the current log's size is the server's end position).
func (s *Source) binaryLogs(ctx context.Context) ([]binlogFile, error) {
	rows, err := s.opts.DB.QueryContext(ctx, "SHOW BINARY LOGS")
	if err != nil {
		return nil, sqldb.Map(err, "SHOW BINARY LOGS")
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	if len(cols) < 2 {
		return nil, redstate.Errorf(redstate.EINTERNAL, "SHOW BINARY LOGS: unexpected columns %v", cols)
	}
	vals := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var out []binlogFile
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, sqldb.Map(err, "SHOW BINARY LOGS")
		}
		n, err := index.BinlogFileNumber(string(vals[0]))
		if err != nil {
			continue
		}
		size, err := strconv.ParseInt(string(vals[1]), 10, 64)
		if err != nil {
			continue
		}
		out = append(out, binlogFile{number: n, size: size})
	}
	return out, sqldb.Map(rows.Err(), "SHOW BINARY LOGS")
}
