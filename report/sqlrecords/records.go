// Package sqlrecords is the SQL report.RecordStore (package sqldb: SQLite embedded, PostgreSQL or
// MySQL/MariaDB in production). The legacy application keeps its assessment records in SQL and only
// the queue in Redis, so with this store a submit succeeds (status 3) while Redis is down and the
// reconciler enqueues it when Redis returns. On SQLite and PostgreSQL every operation is one
// statement (an upsert or a guarded UPDATE … RETURNING), so each is atomic without explicit locks.
// MySQL has neither RETURNING nor a conditional upsert: there a write is a plain INSERT and, when
// the record exists, a transaction that locks its row (SELECT … FOR UPDATE), checks the same guard
// and updates it (see mysqlWrite).
package sqlrecords

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/report"
	"github.com/redstate/redstate/sqldb"
)

// Options configure a Store. The zero value is ready to use.
type Options struct {
	// Table maps the records onto a table and columns (report.sql); the zero value is
	// report.DefaultRecordsSQLConfig, redstate's own assessment_records.
	Table report.RecordsSQLConfig
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
	// names turns the {token}s of a statement into the mapped names (see replacer).
	names *strings.Replacer
	// updated is the time column of the last write.
	updated sqldb.TimeColumn
	// mapped says which columns (by report.sql.records key) the table has.
	mapped map[string]bool
}

var _ report.RecordStore = (*Store)(nil)

// columns is the select list every read returns, in scanRecord's order.
const columns = "{id}, {status}, {answers}, {result}, {error}, {e.updated}"

// New returns a Store on the records table of opts.Table: with the default (redstate's own
// assessment_records) it migrates the record schema; with a mapping it creates the table
// when missing if opts.Table.OwnsTable, and then checks that it has every mapped column,
// reading the time column's type (integer: Unix microseconds; date-time: in
// opts.Table.TimeZone when it has no zone). It never issues DDL on a table it does not own.
// Errors: EINVALID (negative retention, a bad mapping), ENOTFOUND (the table or a column is
// missing: the error names it and its report.sql key), those of sqldb.Migrate.
func New(ctx context.Context, db *sqldb.DB, opts Options) (*Store, error) {
	if opts.Retention < 0 {
		return nil, redstate.Errorf(redstate.EINVALID, "record retention must not be negative, got %s", opts.Retention)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Table == (report.RecordsSQLConfig{}) {
		opts.Table = report.DefaultRecordsSQLConfig()
	}
	cfg := opts.Table
	if err := cfg.Validate(); err != nil {
		return nil, redstate.Wrap(redstate.EINVALID, err, "report.sql")
	}
	s := &Store{db: db, retention: opts.Retention, now: opts.Now, updated: sqldb.MicrosColumn(db.Dialect), mapped: map[string]bool{}}
	for _, kv := range cfg.Columns() {
		s.mapped[kv[0]] = kv[1] != ""
	}
	if cfg.IsDefault() {
		if err := sqldb.Migrate(ctx, db, Component, Migrations); err != nil {
			return nil, err
		}
		s.names = replacer(db.Dialect, cfg, s.updated)
		return s, nil
	}
	if cfg.OwnsTable {
		for _, stmt := range ownedTable(db.Dialect, cfg) {
			if _, err := db.ExecContext(ctx, stmt); err != nil {
				return nil, sqldb.Map(err, "create the report.sql records table")
			}
		}
	}
	if _, err := sqldb.ColumnTypes(ctx, db, cfg.Records.Table, nil); err != nil {
		return nil, redstate.Wrap(redstate.ErrorCode(err), err, "report.sql.records.table: table "+cfg.Records.Table+" not found")
	}
	for _, kv := range cfg.Columns() {
		if kv[1] == "" {
			continue
		}
		types, err := sqldb.ColumnTypes(ctx, db, cfg.Records.Table, []string{kv[1]})
		if err != nil {
			return nil, redstate.Wrap(redstate.ErrorCode(err), err, fmt.Sprintf("report.sql.records.%s: table %s has no column %s", kv[0], cfg.Records.Table, kv[1]))
		}
		if kv[0] == "updated" {
			loc, _ := cfg.Location()
			if s.updated, err = sqldb.TimeColumnOf(db.Dialect, types[0], loc); err != nil {
				return nil, redstate.Wrap(redstate.EINVALID, err, "report.sql.records.updated: column "+cfg.Records.Table+"."+kv[1])
			}
		}
	}
	s.names = replacer(db.Dialect, cfg, s.updated)
	return s, nil
}

// replacer turns the tokens of the statements into the mapped, quoted names: {T} the table;
// {id}, {status}, {answers}, {result}, {error}, {updated} its columns; {e.updated} the time
// column as its TimeColumn.Expr and {T.updated}, {T.status} qualified by the table. An
// optional column that is not mapped reads as NULL (answers, result) or ” (error); the
// statements leave it out of their INSERT and SET lists (Store.insert, Store.set).
func replacer(d sqldb.Dialect, cfg report.RecordsSQLConfig, updated sqldb.TimeColumn) *strings.Replacer {
	q, t := d.Quote, d.Quote(cfg.Records.Table)
	pairs := []string{"{T}", t}
	for _, kv := range cfg.Columns() {
		key, col := kv[0], kv[1]
		switch {
		case col == "" && key == "error":
			pairs = append(pairs, "{error}", "''")
		case col == "":
			pairs = append(pairs, "{"+key+"}", "NULL")
		case key == "updated":
			pairs = append(pairs, "{updated}", q(col), "{e.updated}", updated.Expr(q(col)), "{T.updated}", updated.Expr(t+"."+q(col)))
		case key == "status":
			pairs = append(pairs, "{status}", q(col), "{T.status}", t+"."+q(col))
		default:
			pairs = append(pairs, "{"+key+"}", q(col))
		}
	}
	return strings.NewReplacer(pairs...)
}

// sql returns query with its tokens replaced and its placeholders rebound.
func (s *Store) sql(query string) string { return s.db.Rebind(s.names.Replace(query)) }

// set returns the assignment ", {key} = expr", or "" when the optional column key is not
// mapped.
func (s *Store) set(key, expr string) string {
	if !s.mapped[key] {
		return ""
	}
	return ", {" + key + "} = " + expr
}

// insert returns the INSERT column list and VALUES list of a new record with the given
// values of the optional columns (answers, result, error; SQL expressions), leaving out those
// not mapped: "{id}, {status}, …, {updated}" and "?, <status>, …, ?".
func (s *Store) insert(status string, optional [3]string) (string, string) {
	cols, vals := "{id}, {status}", "?, "+status
	for i, key := range []string{"answers", "result", "error"} {
		if s.mapped[key] {
			cols, vals = cols+", {"+key+"}", vals+", "+optional[i]
		}
	}
	return cols + ", {updated}", vals + ", ?"
}

// cutoff returns the oldest live update time, as an argument of the time column: rows below
// it are expired.
func (s *Store) cutoff(now time.Time) any {
	if s.retention == 0 {
		if s.updated == sqldb.MicrosColumn(s.db.Dialect) {
			return int64(math.MinInt64)
		}
		return s.updated.Arg(time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC))
	}
	return s.updated.Arg(now.Add(-s.retention))
}

// Create implements report.RecordStore. An expired record with the same id is replaced.
func (s *Store) Create(ctx context.Context, id int64, status int, answers json.RawMessage) (*report.Record, error) {
	if err := report.CheckCreate(id, status, answers); err != nil {
		return nil, err
	}
	now := s.now()
	cols, vals := s.insert("?", [3]string{"?", "NULL", "''"})
	args := []any{id, status}
	if s.mapped["answers"] {
		args = append(args, text(answers))
	}
	var (
		r   *report.Record
		err error
	)
	if s.db.Dialect == sqldb.MySQL {
		set, setArgs := "{status} = ?"+s.set("answers", "?"), []any{status}
		if s.mapped["answers"] {
			setArgs = append(setArgs, text(answers))
		}
		r, err = s.mysqlWrite(ctx, "record create", id, &insert{cols, vals, append(args, s.updated.Arg(now))}, func(cur *report.Record) bool {
			return !s.live(now)(cur)
		}, set+s.set("result", "NULL")+s.set("error", "''")+", {updated} = ?", append(setArgs, s.updated.Arg(now))...)
	} else {
		r, err = s.one(ctx, "record create", id, `INSERT INTO {T} (`+cols+`) VALUES (`+vals+`)
		ON CONFLICT ({id}) DO UPDATE SET {status} = excluded.{status}`+s.set("answers", "excluded.{answers}")+s.set("result", "NULL")+
			s.set("error", "''")+`, {updated} = excluded.{updated}
		WHERE {T.updated} < ?
		RETURNING `+columns, append(args, s.updated.Arg(now), s.cutoff(now))...)
	}
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
	cols, vals := s.insert("3", [3]string{"?", "NULL", "''"})
	args := []any{id}
	if s.mapped["answers"] {
		args = append(args, text(answers))
	}
	var (
		r   *report.Record
		err error
	)
	if s.db.Dialect == sqldb.MySQL {
		setArgs := args[1:]
		r, err = s.mysqlWrite(ctx, "record submit", id, &insert{cols, vals, append(args, s.updated.Arg(now))}, func(cur *report.Record) bool {
			return cur.Status == 1 || cur.Status == 2 || !s.live(now)(cur)
		}, "{status} = 3"+s.set("answers", "?")+s.set("result", "NULL")+s.set("error", "''")+", {updated} = ?", append(setArgs, s.updated.Arg(now))...)
	} else {
		r, err = s.one(ctx, "record submit", id, `INSERT INTO {T} (`+cols+`) VALUES (`+vals+`)
		ON CONFLICT ({id}) DO UPDATE SET {status} = 3`+s.set("answers", "excluded.{answers}")+s.set("result", "NULL")+
			s.set("error", "''")+`, {updated} = excluded.{updated}
		WHERE {T.status} IN (1, 2) OR {T.updated} < ?
		RETURNING `+columns, append(args, s.updated.Arg(now), s.cutoff(now))...)
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
	return s.one(ctx, "record get", id, `SELECT `+columns+` FROM {T} WHERE {id} = ? AND {e.updated} >= ?`, id, s.cutoff(s.now()))
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
	args := []any{}
	if s.mapped["result"] {
		args = append(args, text(result))
	}
	set := `{status} = 4` + s.set("result", "?") + s.set("error", "''") + `, {updated} = ?`
	if s.db.Dialect == sqldb.MySQL {
		return s.mysqlWrite(ctx, "record set result", id, nil, s.live(now), set, append(args, s.updated.Arg(now))...)
	}
	return s.one(ctx, "record set result", id, `UPDATE {T} SET `+set+`
		WHERE {id} = ? AND {e.updated} >= ? RETURNING `+columns, append(args, s.updated.Arg(now), id, s.cutoff(now))...)
}

// SetFailed implements report.RecordStore.
func (s *Store) SetFailed(ctx context.Context, id int64, reason string) (*report.Record, error) {
	if err := report.CheckRecordID(id); err != nil {
		return nil, err
	}
	now := s.now()
	args := []any{}
	if s.mapped["error"] {
		args = append(args, reason)
	}
	set := `{status} = 5` + s.set("result", "NULL") + s.set("error", "?") + `, {updated} = ?`
	if s.db.Dialect == sqldb.MySQL {
		return s.mysqlWrite(ctx, "record set failed", id, nil, s.live(now), set, append(args, s.updated.Arg(now))...)
	}
	return s.one(ctx, "record set failed", id, `UPDATE {T} SET `+set+`
		WHERE {id} = ? AND {e.updated} >= ? RETURNING `+columns, append(args, s.updated.Arg(now), id, s.cutoff(now))...)
}

// ResetForRegeneration implements report.RecordStore with one guarded UPDATE.
func (s *Store) ResetForRegeneration(ctx context.Context, id int64) (*report.Record, error) {
	if err := report.CheckRecordID(id); err != nil {
		return nil, err
	}
	now := s.now()
	set := `{status} = 3` + s.set("result", "NULL") + s.set("error", "''") + `, {updated} = ?`
	var (
		r   *report.Record
		err error
	)
	if s.db.Dialect == sqldb.MySQL {
		live := s.live(now)
		r, err = s.mysqlWrite(ctx, "record reset", id, nil, func(cur *report.Record) bool {
			return live(cur) && (cur.Status == 3 || cur.Status == 5)
		}, set, s.updated.Arg(now))
	} else {
		r, err = s.one(ctx, "record reset", id, `UPDATE {T} SET `+set+`
		WHERE {id} = ? AND {e.updated} >= ? AND {status} IN (3, 5) RETURNING `+columns, s.updated.Arg(now), id, s.cutoff(now))
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
	rows, err := s.db.QueryContext(ctx, s.sql(`SELECT {id} FROM {T}
		WHERE {status} = 3 AND {e.updated} <= ? AND {e.updated} >= ? ORDER BY {id}`), s.updated.Arg(now.Add(-age)), s.cutoff(now))
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
	res, err := s.db.ExecContext(ctx, s.sql(`DELETE FROM {T} WHERE {e.updated} < ?`), s.cutoff(s.now()))
	if err != nil {
		return 0, sqldb.Map(err, "delete expired records")
	}
	n, err := res.RowsAffected()
	return n, sqldb.Map(err, "delete expired records")
}

// insert is the INSERT of a fresh record a MySQL write tries first (Store.insert's column and
// VALUES lists, and their arguments).
type insert struct {
	cols, vals string
	args       []any
}

// errRefused is mysqlWrite's guard refusing the current record.
var errRefused = errors.New("the record's state refuses the write")

// live is the guard "the record has not expired" at now (always true without retention).
func (s *Store) live(now time.Time) func(*report.Record) bool {
	return func(cur *report.Record) bool {
		return s.retention == 0 || !cur.UpdatedAt.Before(now.Add(-s.retention).Truncate(time.Microsecond))
	}
}

// mysqlWrite is a guarded write on MySQL, the form of the upserts and guarded UPDATEs of the
// other engines: with ins set it first tries a plain INSERT of a fresh record and reads it back
// (its own transaction, ended at once so that the shared lock a duplicate key leaves is not
// held); then, in a transaction, it locks
// the record's row (SELECT … FOR UPDATE), and when guard accepts the current record applies
// set (an UPDATE's SET list with tokens, args its values) and reads the row back. A missing
// record, or one guard refuses, is ENOTFOUND, as the other engines' statements return no row.
// A record deleted between the INSERT and the lock is inserted again (bounded).
func (s *Store) mysqlWrite(ctx context.Context, op string, id int64, ins *insert, guard func(*report.Record) bool, set string, args ...any) (*report.Record, error) {
	for attempt := 0; ; attempt++ {
		if ins != nil {
			var out *report.Record
			err := sqldb.InTx(ctx, s.db, func(tx *sql.Tx) error {
				if _, err := tx.ExecContext(ctx, s.sql(`INSERT INTO {T} (`+ins.cols+`) VALUES (`+ins.vals+`)`), ins.args...); err != nil {
					return err
				}
				var err error
				out, err = s.scanRecord(tx.QueryRowContext(ctx, s.sql(`SELECT `+columns+` FROM {T} WHERE {id} = ?`), id))
				return err
			})
			if err == nil {
				return out, nil
			}
			if !sqldb.IsUniqueViolation(err) {
				return nil, sqldb.Map(err, op)
			}
		}
		var out *report.Record
		err := sqldb.InTx(ctx, s.db, func(tx *sql.Tx) error {
			cur, err := s.scanRecord(tx.QueryRowContext(ctx, s.sql(`SELECT `+columns+` FROM {T} WHERE {id} = ? FOR UPDATE`), id))
			if err != nil {
				return err
			}
			if !guard(cur) {
				return errRefused
			}
			if _, err := tx.ExecContext(ctx, s.sql(`UPDATE {T} SET `+set+` WHERE {id} = ?`), append(args, id)...); err != nil {
				return err
			}
			out, err = s.scanRecord(tx.QueryRowContext(ctx, s.sql(`SELECT `+columns+` FROM {T} WHERE {id} = ?`), id))
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
	r, err := s.scanRecord(s.db.QueryRowContext(ctx, s.sql(query), args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, redstate.Wrap(redstate.ENOTFOUND, err, "record "+strconv.FormatInt(id, 10)+" not found")
	}
	if err != nil {
		return nil, sqldb.Map(err, op)
	}
	return r, nil
}

// scanRecord reads one row of columns.
func (s *Store) scanRecord(row *sql.Row) (*report.Record, error) {
	var (
		r                      report.Record
		answers, result, cause sql.NullString
	)
	if err := row.Scan(&r.ID, &r.Status, &answers, &result, &cause, s.updated.Dest(&r.UpdatedAt)); err != nil {
		return nil, err
	}
	if answers.Valid {
		r.Answers = json.RawMessage(answers.String)
	}
	if result.Valid {
		r.Result = json.RawMessage(result.String)
	}
	r.Error = cause.String
	r.StatusText = report.StatusText(r.Status)
	return &r, nil
}

// text is a JSON value as a nullable column: NULL when empty.
func text(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}
