package mysqlsource

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/internal/rediserr"
	"github.com/redstate/redstate/sqldb"
)

// snapshot copies the followed tables' rows at a known position and returns it, recorded as
// the stream's start. Its records in Redis (position, progress) are fenced writes. A snapshot interrupted earlier (its position recorded, the stream's not)
// resumes after the last key copied of each table, outside any transaction.
func (s *Source) snapshot(ctx context.Context) (Position, error) {
	conn, err := s.opts.DB.Conn(ctx)
	if err != nil {
		return Position{}, sqldb.Map(err, "mysql source: snapshot connection")
	}
	defer conn.Close()
	at, consistent, err := s.snapshotPosition(ctx, conn)
	if err != nil {
		return Position{}, err
	}
	s.estimateSnapshot(ctx)
	if consistent {
		// Rolled back when done; on failure the connection is discarded with its transaction.
		defer func() { _, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK") }()
	}
	for _, t := range s.opts.Tables {
		if err := s.copyTable(ctx, conn, t, at); err != nil {
			return Position{}, err
		}
	}
	if err := s.fenced(ctx, "record binlog position", fencedSetScript, []string{s.keys.Position}, at.String()); err != nil {
		return Position{}, err
	}
	s.position.Store(&at)
	return at, nil
}

// snapshotPosition returns the recorded snapshot position (a resumed snapshot) or takes a new
// one: a consistent-snapshot transaction on conn whose start is at the returned position.
func (s *Source) snapshotPosition(ctx context.Context, conn *sql.Conn) (Position, bool, error) {
	text, err := s.opts.Redis.Get(ctx, s.keys.Snapshot).Result()
	if err == nil {
		at, err := ParsePosition(text)
		if err == nil {
			s.log.Info("resuming the snapshot", "position", at.String())
		}
		return at, false, err
	}
	if !errors.Is(err, redis.Nil) {
		return Position{}, false, rediserr.Map(err, "read snapshot position")
	}
	if _, err := conn.ExecContext(ctx, "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ"); err != nil {
		return Position{}, false, sqldb.Map(err, "mysql source: snapshot isolation")
	}
	var at Position
	if s.flavor == index.FlavorMariaDB {
		// MariaDB gives the binlog position of a consistent snapshot without any lock.
		if _, err := conn.ExecContext(ctx, "START TRANSACTION WITH CONSISTENT SNAPSHOT"); err != nil {
			return Position{}, false, sqldb.Map(err, "mysql source: start the snapshot")
		}
		rows, err := conn.QueryContext(ctx, "SHOW STATUS LIKE 'binlog_snapshot_%'")
		if err != nil {
			return Position{}, false, sqldb.Map(err, "mysql source: read the snapshot position")
		}
		for rows.Next() {
			var name, value string
			if err := rows.Scan(&name, &value); err != nil {
				rows.Close()
				return Position{}, false, sqldb.Map(err, "mysql source: read the snapshot position")
			}
			switch strings.ToLower(name) {
			case "binlog_snapshot_file":
				at.File = value
			case "binlog_snapshot_position":
				n, _ := strconv.ParseUint(value, 10, 32)
				at.Pos = uint32(n)
			}
		}
		rows.Close()
		if at.File == "" {
			return Position{}, false, redstate.Errorf(redstate.EINVALID, "mysql source: MariaDB reported no binlog_snapshot_file (is the binary log on?)")
		}
	} else {
		// MySQL: a short global read lock makes the position and the snapshot's start one
		// instant; it is released as soon as the transaction has started.
		if _, err := conn.ExecContext(ctx, "FLUSH TABLES WITH READ LOCK"); err != nil {
			return Position{}, false, redstate.Wrap(redstate.EINVALID, sqldb.Map(err, "FLUSH TABLES WITH READ LOCK"),
				"mysql source: the snapshot's short lock needs the RELOAD privilege")
		}
		at, err = s.masterStatus(ctx, conn)
		if err == nil {
			_, err = conn.ExecContext(ctx, "START TRANSACTION WITH CONSISTENT SNAPSHOT")
		}
		if _, uerr := conn.ExecContext(ctx, "UNLOCK TABLES"); err == nil {
			err = uerr
		}
		if err != nil {
			return Position{}, false, sqldb.Map(err, "mysql source: start the snapshot")
		}
	}
	if err := s.fenced(ctx, "record snapshot position", snapshotStartScript, []string{s.keys.Snapshot, s.keys.Progress}, at.String()); err != nil {
		return Position{}, false, err
	}
	s.log.Info("snapshot started", "position", at.String(), "flavor", s.flavor)
	return at, true, nil
}

// copyTable copies table ("db.table") in keyset order of its index key from the last key
// recorded, each row at version (at, 0), recording the last key after every page (fenced by
// the binlog lease: snapshotProgress).
func (s *Source) copyTable(ctx context.Context, conn *sql.Conn, table string, at Position) error {
	db, name, _ := strings.Cut(table, ".")
	spec, _ := s.ix.Table(db, name)
	cols, err := columns(ctx, conn, db, name)
	if err != nil {
		return err
	}
	v, err := version(at.File, at.Pos, 0)
	if err != nil {
		return err
	}
	ident, key := quote(db)+"."+quote(name), quote(spec.Key)
	read := func(ctx context.Context, after string, first bool, limit int) ([]index.Change, string, error) {
		q, args := "SELECT * FROM "+ident+" WHERE "+key+" > ? ORDER BY "+key+" LIMIT ?", []any{after, limit}
		if first {
			q, args = "SELECT * FROM "+ident+" ORDER BY "+key+" LIMIT ?", []any{limit}
		}
		readAt := time.Now().UTC()
		rows, err := conn.QueryContext(ctx, q, args...)
		if err != nil {
			return nil, "", sqldb.Map(err, "snapshot "+table)
		}
		defer rows.Close()
		var changes []index.Change
		last := after
		if _, err := scanRows(rows, cols, func(row map[string]*string) bool {
			changes = append(changes, index.Change{DB: db, Table: name, Op: index.OpUpsert, Row: row, Version: v, Time: readAt})
			if k := row[spec.Key]; k != nil {
				last = *k
			}
			return true
		}); err != nil {
			return nil, "", sqldb.Map(err, "snapshot "+table)
		}
		return changes, last, nil
	}
	return index.PagedSnapshot{Indexer: s.ix, Progress: snapshotProgress{s}, PageSize: s.opts.SnapshotPage, Name: "snapshot of table",
		Copied: func(n int) { s.SnapshotRows.Add(int64(n)) }, Logger: s.log}.Copy(ctx, table, read)
}

// snapshotProgress is the snapshot's progress in Keys.Progress, its writes fenced by the
// binlog lease: refused (errLeaseLost) once another instance holds it.
type snapshotProgress struct{ s *Source }

// Last implements index.SnapshotProgress.
func (p snapshotProgress) Last(ctx context.Context, table string) (string, bool, error) {
	last, err := p.s.opts.Redis.HGet(ctx, p.s.keys.Progress, table).Result()
	if errors.Is(err, redis.Nil) {
		return "", false, nil
	}
	return last, err == nil, rediserr.Map(err, "read snapshot progress")
}

// Record implements index.SnapshotProgress.
func (p snapshotProgress) Record(ctx context.Context, table, value string) error {
	what := "record snapshot progress"
	if value == index.SnapshotDone {
		what = "record snapshot done"
	}
	return p.s.fenced(ctx, what, fencedHSetScript, []string{p.s.keys.Progress}, table, value)
}
