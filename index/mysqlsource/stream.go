package mysqlsource

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/index"
)

// stream reads the binary log from `from` and applies the followed tables' row changes in
// batches (see pipeline), recording after each batch the end of the last transaction it
// completed (never a position inside a transaction: resuming there would lack the
// transaction's table maps).
func (s *Source) stream(ctx context.Context, from Position, progressed *bool) error {
	cfg := replication.BinlogSyncerConfig{
		ServerID: s.opts.ServerID, Flavor: s.flavor,
		Host: s.addr.host, Port: s.addr.port, User: s.addr.user, Password: s.addr.password,
		ParseTime: true, DisableRetrySync: true,
		HeartbeatPeriod: 10 * time.Second, ReadTimeout: 30 * time.Second,
		FillZeroLogPos: s.flavor == index.FlavorMariaDB,
		Logger:         slog.New(slog.DiscardHandler), // its failures come back as errors, logged by Run
	}
	syncer := replication.NewBinlogSyncer(cfg)
	defer syncer.Close()
	st, err := syncer.StartSync(mysql.Position{Name: from.File, Pos: from.Pos})
	if err != nil {
		return s.mapStreamError(err, from)
	}
	s.log.Info("streaming the binary log", "position", from.String(), "flavor", s.flavor)
	defer s.watch(ctx)()
	return s.pipeline(ctx, st, from, progressed)
}

// batch is the stream's state between flushes.
type batch struct {
	// file is the binlog file being read; committed the end of the last complete transaction
	// read; recorded the position last written to Redis.
	file                string
	committed, recorded Position
	changes             []index.Change
	// skipped counts row changes of tables not followed; last is the newest event's time.
	skipped int
	last    time.Time
}

func (b *batch) dirty() bool {
	return len(b.changes) > 0 || b.skipped > 0 || b.committed != b.recorded
}

// handle takes one event into b.
func (s *Source) handle(ctx context.Context, ev *replication.BinlogEvent, b *batch) error {
	h := ev.Header
	if h.Timestamp != 0 {
		b.last = time.Unix(int64(h.Timestamp), 0)
	}
	switch e := ev.Event.(type) {
	case *replication.RotateEvent:
		b.file = string(e.NextLogName)
		if len(b.changes) == 0 {
			b.committed = Position{File: b.file, Pos: uint32(e.Position)}
		}
	case *replication.XIDEvent:
		b.committed = Position{File: b.file, Pos: h.LogPos}
	case *replication.QueryEvent:
		q := strings.TrimSpace(string(e.Query))
		if strings.EqualFold(q, "BEGIN") {
			return nil
		}
		if !strings.EqualFold(q, "COMMIT") {
			// DDL (or a statement-logged change): the columns of a followed table may have
			// changed, so its schema is read again at its next row event.
			clear(s.schemas)
		}
		if db, name, ok := truncatedTable(q, string(e.Schema)); ok && s.followed[db+"."+name] {
			v, err := version(b.file, h.LogPos, 0)
			if err != nil {
				return err
			}
			b.changes = append(b.changes, index.Change{DB: db, Table: name, Op: index.OpTruncate, Version: v, Time: b.last})
			s.progress.pending.Add(1)
		}
		b.committed = Position{File: b.file, Pos: h.LogPos}
	case *replication.RowsEvent:
		return s.rows(ctx, ev, e, b)
	}
	return nil
}

// rows converts a rows event of a followed table into changes.
func (s *Source) rows(ctx context.Context, ev *replication.BinlogEvent, e *replication.RowsEvent, b *batch) error {
	db, name := string(e.Table.Schema), string(e.Table.Table)
	var op index.Op
	step := 1
	switch ev.Header.EventType {
	case replication.WRITE_ROWS_EVENTv0, replication.WRITE_ROWS_EVENTv1, replication.WRITE_ROWS_EVENTv2, replication.MARIADB_WRITE_ROWS_COMPRESSED_EVENT_V1:
		op = index.OpUpsert
	case replication.UPDATE_ROWS_EVENTv0, replication.UPDATE_ROWS_EVENTv1, replication.UPDATE_ROWS_EVENTv2, replication.MARIADB_UPDATE_ROWS_COMPRESSED_EVENT_V1, replication.PARTIAL_UPDATE_ROWS_EVENT:
		op, step = index.OpUpsert, 2 // before and after images alternate
	case replication.DELETE_ROWS_EVENTv0, replication.DELETE_ROWS_EVENTv1, replication.DELETE_ROWS_EVENTv2, replication.MARIADB_DELETE_ROWS_COMPRESSED_EVENT_V1:
		op = index.OpDelete
	default:
		return nil
	}
	if !s.followed[db+"."+name] {
		b.skipped += len(e.Rows) / step
		return nil
	}
	cols, err := s.tableColumns(ctx, db, name, int(e.ColumnCount))
	if err != nil {
		return err
	}
	names := e.Table.ColumnNameString() // binlog_row_metadata=FULL: the names as of the event
	renamed := renames(names, cols)
	if spec, ok := s.ix.Table(db, name); ok {
		if err := checkImage(spec, int(e.ColumnCount), cols, names, renamed); err != nil {
			return err
		}
	}
	shape := imageLayout(cols, names, renamed)
	before := len(b.changes)
	for i := step - 1; i < len(e.Rows); i += step {
		v, err := version(b.file, ev.Header.LogPos, i/step)
		if err != nil {
			return err
		}
		b.changes = append(b.changes, index.Change{DB: db, Table: name, Op: op, Row: shape.row(e.Rows[i]), Version: v, Time: b.last})
	}
	s.progress.pending.Add(int64(len(b.changes) - before))
	return nil
}

// imageLayout says how to name a rows event's image values: by the event's own column names
// when the binlog carries them, a value also under its column's current name when the column was renamed since (see
// renames), else by position in the table's current columns (a column added at the end leaves
// the older images' columns in place). Values beyond the known columns are dropped.
//
// It is resolved once per rows event, so naming each row costs no column lookup.
func imageLayout(cols []column, names []string, renamed map[string]string) layout {
	byName := func(n string) column {
		for _, c := range cols {
			if c.Name == n {
				return c
			}
		}
		return column{Name: n}
	}
	n := max(len(names), len(cols))
	l := make(layout, n)
	for i := range l {
		if i < len(names) {
			l[i].col = byName(names[i])
			if to, ok := renamed[l[i].col.Name]; ok {
				l[i].renamed, l[i].also = byName(to), true
			}
		} else {
			l[i].col = cols[i]
		}
	}
	return l
}

// layout is the column of each position of a row image (see imageLayout).
type layout []struct {
	col, renamed column
	also         bool
}

// row names one image's values; values beyond the known columns are dropped.
func (l layout) row(values []any) map[string]*string {
	row := make(map[string]*string, len(values))
	for i, v := range values {
		if i >= len(l) {
			continue
		}
		row[l[i].col.Name] = text(v, l[i].col)
		if l[i].also {
			row[l[i].renamed.Name] = text(v, l[i].renamed)
		}
	}
	return row
}

// tableColumns returns db.table's columns, read again when unknown or when the event has more
// columns than known (a DDL not seen, e.g. before a restart).
func (s *Source) tableColumns(ctx context.Context, db, name string, n int) ([]column, error) {
	key := db + "." + name
	cols, ok := s.schemas[key]
	if ok && n <= len(cols) {
		return cols, nil
	}
	cols, err := columns(ctx, s.opts.DB, db, name)
	if err != nil {
		return nil, err
	}
	s.schemas[key] = cols
	return cols, nil
}

// flush applies b's changes and records the last complete transaction's end (a fenced write:
// refused, errLeaseLost, once another instance holds the lease).
func (s *Source) flush(ctx context.Context, b *batch) error {
	if b.skipped > 0 {
		s.ix.CountSkipped(b.skipped)
		b.skipped = 0
	}
	if len(b.changes) > 0 {
		if _, err := s.ix.Apply(index.WithSource(ctx, "binlog"), b.changes); err != nil {
			return err
		}
		s.Events.Add(int64(len(b.changes)))
		s.progress.pending.Add(-int64(len(b.changes)))
		b.changes = b.changes[:0]
	}
	if !b.last.IsZero() {
		s.lagMillis.Store(max(0, time.Since(b.last).Milliseconds()))
	}
	if b.committed == b.recorded {
		return nil
	}
	if err := s.fenced(ctx, "record binlog position", fencedSetScript, []string{s.keys.Position}, b.committed.String()); err != nil {
		return err
	}
	b.recorded = b.committed
	at := b.committed
	s.position.Store(&at)
	return nil
}

// mapStreamError names what to do about the replication connection's errors.
func (s *Source) mapStreamError(err error, at Position) error {
	var my *mysql.MyError
	if errors.As(err, &my) {
		switch my.Code {
		case mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG: // 1236
			return fmt.Errorf("%w (server: %s)", s.purged(at), my.Message)
		case mysql.ER_SPECIFIC_ACCESS_DENIED_ERROR, mysql.ER_ACCESS_DENIED_ERROR:
			return redstate.Wrap(redstate.EINVALID, err, "mysql source: the account cannot read the binary log; it needs REPLICATION SLAVE")
		}
	}
	return redstate.Wrap(redstate.EUNAVAILABLE, err, "mysql source: binlog stream at "+at.String())
}
