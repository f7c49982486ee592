// Package sqlrecords is the SQL report.RecordStore (package sqldb: SQLite embedded, PostgreSQL
// or MySQL/MariaDB in production). The seed keeps its assessment records in SQL and only the
// queue in Redis, so with this store a submit succeeds (status 3) while Redis is down and the
// reconciler enqueues it when Redis returns. On SQLite and PostgreSQL every operation is one
// statement (an upsert or a guarded UPDATE … RETURNING), so each is atomic without explicit
// locks. MySQL has neither RETURNING nor a conditional upsert: there a write is a plain INSERT
// and, when the record exists, a transaction that locks its row (SELECT … FOR UPDATE), checks
// the same guard and updates it (see mysqlWrite).
package sqlrecords

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/report"
	"github.com/redstate/redstate/sqldb"
)

// Options configure a Store. The zero value is ready to use.
type Options struct {
	// Retention is how long a record is kept after its last write; 0 keeps records forever.
	// An expired record reads as ENOTFOUND at once; DeleteExpired removes it.
	Retention time.Duration
	// Now is the clock of UpdatedAt. Default time.Now.
	Now func() time.Time
}

// Store is the SQL report.RecordStore. It is safe for concurrent use, also from several
// processes sharing the database.
type Store struct {
	db        *sqldb.DB
	retention time.Duration
	now       func() time.Time
}

var _ report.RecordStore = (*Store)(nil)

// columns is the select list every read returns, in scanRecord's order.
const columns = "id, status, answers, result, error, updated_at"

// New migrates the record schema on db and returns a Store.
// Errors: EINVALID (negative retention), those of sqldb.Migrate.
func New(ctx context.Context, db *sqldb.DB, opts Options) (*Store, error) {
	if opts.Retention < 0 {
		return nil, redstate.Errorf(redstate.EINVALID, "record retention must not be negative, got %s", opts.Retention)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if err := sqldb.Migrate(ctx, db, Component, Migrations); err != nil {
		return nil, err
	}
	return &Store{db: db, retention: opts.Retention, now: opts.Now}, nil
}

// cutoff returns the oldest live updated_at (Unix µs): rows below it are expired.
func (s *Store) cutoff(now time.Time) int64 {
	if s.retention == 0 {
		return math.MinInt64
	}
	return now.Add(-s.retention).UnixMicro()
}

// Create implements report.RecordStore. An expired record with the same id is replaced.
func (s *Store) Create(ctx context.Context, id int64, status int, answers json.RawMessage) (*report.Record, error) {
	if err := report.CheckCreate(id, status, answers); err != nil {
		return nil, err
	}
	now := s.now()
	if s.db.Dialect == sqldb.MySQL {
		r, err := s.mysqlWrite(ctx, "record create", id, &insert{status, answers, now}, func(cur *report.Record) bool {
			return cur.UpdatedAt.UnixMicro() < s.cutoff(now)
		}, "status = ?, answers = ?, result = NULL, error = '', updated_at = ?", status, text(answers), now.UnixMicro())
		if redstate.IsCode(err, redstate.ENOTFOUND) {
			return nil, redstate.Errorf(redstate.ECONFLICT, "record %d already exists", id)
		}
		return r, err
	}
	r, err := s.one(ctx, "record create", id, `INSERT INTO `+Table+` (id, status, answers, result, error, updated_at)
		VALUES (?, ?, ?, NULL, '', ?)
		ON CONFLICT (id) DO UPDATE SET status = excluded.status, answers = excluded.answers, result = NULL,
			error = '', updated_at = excluded.updated_at
		WHERE `+Table+`.updated_at < ?
		RETURNING `+columns, id, status, text(answers), now.UnixMicro(), s.cutoff(now))
	if redstate.IsCode(err, redstate.ENOTFOUND) {
		return nil, redstate.Errorf(redstate.ECONFLICT, "record %d already exists", id)
	}
	return r, err
}

// Submit implements report.RecordStore in one upsert: insert with status 3, or update a record
// in status 1 or 2 (or an expired one); a record in status 3, 4 or 5 is left unchanged.
func (s *Store) Submit(ctx context.Context, id int64, answers json.RawMessage) (*report.Record, error) {
	if err := report.CheckRecordID(id); err != nil {
		return nil, err
	}
	if err := report.CheckRecordJSON("answers", answers); err != nil {
		return nil, err
	}
	now := s.now()
	var (
		r   *report.Record
		err error
	)
	if s.db.Dialect == sqldb.MySQL {
		r, err = s.mysqlWrite(ctx, "record submit", id, &insert{report.StatusGenerating, answers, now}, func(cur *report.Record) bool {
			return cur.Status == 1 || cur.Status == 2 || cur.UpdatedAt.UnixMicro() < s.cutoff(now)
		}, "status = 3, answers = ?, result = NULL, error = '', updated_at = ?", text(answers), now.UnixMicro())
	} else {
		r, err = s.one(ctx, "record submit", id, `INSERT INTO `+Table+` (id, status, answers, result, error, updated_at)
		VALUES (?, 3, ?, NULL, '', ?)
		ON CONFLICT (id) DO UPDATE SET status = 3, answers = excluded.answers, result = NULL, error = '',
			updated_at = excluded.updated_at
		WHERE `+Table+`.status IN (1, 2) OR `+Table+`.updated_at < ?
		RETURNING `+columns, id, text(answers), now.UnixMicro(), s.cutoff(now))
	}
	if redstate.IsCode(err, redstate.ENOTFOUND) {
		cur, gerr := s.Get(ctx, id)
		if gerr != nil {
			return nil, gerr
		}
		return nil, report.SubmitConflict(id, cur.Status)
	}
	return r, err
}

// Get implements report.RecordStore.
func (s *Store) Get(ctx context.Context, id int64) (*report.Record, error) {
	if err := report.CheckRecordID(id); err != nil {
		return nil, err
	}
	return s.one(ctx, "record get", id, `SELECT `+columns+` FROM `+Table+` WHERE id = ? AND updated_at >= ?`, id, s.cutoff(s.now()))
}

// SetResult implements report.RecordStore.
func (s *Store) SetResult(ctx context.Context, id int64, result json.RawMessage) (*report.Record, error) {
	if err := report.CheckRecordID(id); err != nil {
		return nil, err
	}
	if err := report.CheckRecordJSON("result", result); err != nil {
		return nil, err
	}
	now := s.now()
	if s.db.Dialect == sqldb.MySQL {
		return s.mysqlWrite(ctx, "record set result", id, nil, s.live(now),
			"status = 4, result = ?, error = '', updated_at = ?", text(result), now.UnixMicro())
	}
	return s.one(ctx, "record set result", id, `UPDATE `+Table+` SET status = 4, result = ?, error = '', updated_at = ?
		WHERE id = ? AND updated_at >= ? RETURNING `+columns, text(result), now.UnixMicro(), id, s.cutoff(now))
}

// SetFailed implements report.RecordStore.
func (s *Store) SetFailed(ctx context.Context, id int64, reason string) (*report.Record, error) {
	if err := report.CheckRecordID(id); err != nil {
		return nil, err
	}
	now := s.now()
	if s.db.Dialect == sqldb.MySQL {
		return s.mysqlWrite(ctx, "record set failed", id, nil, s.live(now),
			"status = 5, result = NULL, error = ?, updated_at = ?", reason, now.UnixMicro())
	}
	return s.one(ctx, "record set failed", id, `UPDATE `+Table+` SET status = 5, result = NULL, error = ?, updated_at = ?
		WHERE id = ? AND updated_at >= ? RETURNING `+columns, reason, now.UnixMicro(), id, s.cutoff(now))
}

// ResetForRegeneration implements report.RecordStore with one guarded UPDATE.
func (s *Store) ResetForRegeneration(ctx context.Context, id int64) (*report.Record, error) {
	if err := report.CheckRecordID(id); err != nil {
		return nil, err
	}
	now := s.now()
	var (
		r   *report.Record
		err error
	)
	if s.db.Dialect == sqldb.MySQL {
		live := s.live(now)
		r, err = s.mysqlWrite(ctx, "record reset", id, nil, func(cur *report.Record) bool {
			return live(cur) && (cur.Status == 3 || cur.Status == 5)
		}, "status = 3, result = NULL, error = '', updated_at = ?", now.UnixMicro())
	} else {
		r, err = s.one(ctx, "record reset", id, `UPDATE `+Table+` SET status = 3, result = NULL, error = '', updated_at = ?
		WHERE id = ? AND updated_at >= ? AND status IN (3, 5) RETURNING `+columns, now.UnixMicro(), id, s.cutoff(now))
	}
	if redstate.IsCode(err, redstate.ENOTFOUND) {
		cur, gerr := s.Get(ctx, id)
		if gerr != nil {
			return nil, gerr
		}
		return nil, redstate.Errorf(redstate.ECONFLICT, "record %d is in status %d (%s); only status 3 or 5 may be regenerated",
			id, cur.Status, report.StatusText(cur.Status))
	}
	return r, err
}

// ListGeneratingOlderThan implements report.RecordStore.
func (s *Store) ListGeneratingOlderThan(ctx context.Context, age time.Duration) ([]int64, error) {
	if age < 0 {
		return nil, redstate.Errorf(redstate.EINVALID, "age must not be negative, got %s", age)
	}
	now := s.now()
	rows, err := s.db.QueryContext(ctx, s.db.Rebind(`SELECT id FROM `+Table+`
		WHERE status = 3 AND updated_at <= ? AND updated_at >= ? ORDER BY id`), now.Add(-age).UnixMicro(), s.cutoff(now))
	if err != nil {
		return nil, sqldb.Map(err, "list generating records")
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, sqldb.Map(err, "list generating records")
		}
		ids = append(ids, id)
	}
	return ids, sqldb.Map(rows.Err(), "list generating records")
}

// DeleteExpired deletes the records past the retention and returns how many; with no
// retention it deletes nothing. Errors: EUNAVAILABLE.
func (s *Store) DeleteExpired(ctx context.Context) (int64, error) {
	if s.retention == 0 {
		return 0, nil
	}
	res, err := s.db.ExecContext(ctx, s.db.Rebind(`DELETE FROM `+Table+` WHERE updated_at < ?`), s.cutoff(s.now()))
	if err != nil {
		return 0, sqldb.Map(err, "delete expired records")
	}
	n, err := res.RowsAffected()
	return n, sqldb.Map(err, "delete expired records")
}

// insert is the record a MySQL write inserts when none exists.
type insert struct {
	status  int
	answers json.RawMessage
	now     time.Time
}

// errRefused is mysqlWrite's guard refusing the current record.
var errRefused = errors.New("the record's state refuses the write")

// live is the guard "the record has not expired" at now.
func (s *Store) live(now time.Time) func(*report.Record) bool {
	return func(cur *report.Record) bool { return cur.UpdatedAt.UnixMicro() >= s.cutoff(now) }
}

// mysqlWrite is a guarded write on MySQL, the form of the upserts and guarded UPDATEs of the
// other engines: with ins set it first tries a plain INSERT of a fresh record (autocommit, so
// that the shared lock a duplicate key leaves is not held); then, in a transaction, it locks
// the record's row (SELECT … FOR UPDATE), and when guard accepts the current record applies
// set (an UPDATE's SET list, args its values) and reads the row back. A missing record, or one
// guard refuses, is ENOTFOUND, as the other engines' statements return no row. A record
// deleted between the INSERT and the lock is inserted again (bounded).
func (s *Store) mysqlWrite(ctx context.Context, op string, id int64, ins *insert, guard func(*report.Record) bool, set string, args ...any) (*report.Record, error) {
	for attempt := 0; ; attempt++ {
		if ins != nil {
			_, err := s.db.ExecContext(ctx, `INSERT INTO `+Table+` (id, status, answers, result, error, updated_at) VALUES (?, ?, ?, NULL, '', ?)`,
				id, ins.status, text(ins.answers), ins.now.UnixMicro())
			if err == nil {
				return &report.Record{ID: id, Status: ins.status, StatusText: report.StatusText(ins.status), Answers: ins.answers,
					UpdatedAt: time.UnixMicro(ins.now.UnixMicro()).UTC()}, nil
			}
			if !sqldb.IsUniqueViolation(err) {
				return nil, sqldb.Map(err, op)
			}
		}
		var out *report.Record
		err := sqldb.InTx(ctx, s.db, func(tx *sql.Tx) error {
			cur, err := scanRecord(tx.QueryRowContext(ctx, `SELECT `+columns+` FROM `+Table+` WHERE id = ? FOR UPDATE`, id))
			if err != nil {
				return err
			}
			if !guard(cur) {
				return errRefused
			}
			if _, err := tx.ExecContext(ctx, `UPDATE `+Table+` SET `+set+` WHERE id = ?`, append(args, id)...); err != nil {
				return err
			}
			out, err = scanRecord(tx.QueryRowContext(ctx, `SELECT `+columns+` FROM `+Table+` WHERE id = ?`, id))
			return err
		})
		switch {
		case err == nil:
			return out, nil
		case errors.Is(err, sql.ErrNoRows) && ins != nil && attempt < 3:
			continue // deleted since the INSERT found it: insert again
		case errors.Is(err, sql.ErrNoRows), errors.Is(err, errRefused):
			return nil, redstate.Wrap(redstate.ENOTFOUND, err, "record "+strconv.FormatInt(id, 10)+" not found")
		}
		return nil, sqldb.Map(err, op)
	}
}

// one runs a statement about record id returning at most one record. No row is ENOTFOUND.
func (s *Store) one(ctx context.Context, op string, id int64, query string, args ...any) (*report.Record, error) {
	r, err := scanRecord(s.db.QueryRowContext(ctx, s.db.Rebind(query), args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, redstate.Wrap(redstate.ENOTFOUND, err, "record "+strconv.FormatInt(id, 10)+" not found")
	}
	if err != nil {
		return nil, sqldb.Map(err, op)
	}
	return r, nil
}

// scanRecord reads one row of columns.
func scanRecord(row *sql.Row) (*report.Record, error) {
	var (
		r               report.Record
		answers, result sql.NullString
		updated         int64
	)
	if err := row.Scan(&r.ID, &r.Status, &answers, &result, &r.Error, &updated); err != nil {
		return nil, err
	}
	if answers.Valid {
		r.Answers = json.RawMessage(answers.String)
	}
	if result.Valid {
		r.Result = json.RawMessage(result.String)
	}
	r.StatusText = report.StatusText(r.Status)
	r.UpdatedAt = time.UnixMicro(updated).UTC()
	return &r, nil
}

// text is a JSON value as a nullable column: NULL when empty.
func text(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}
