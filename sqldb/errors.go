package sqldb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"net"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/redstate/redstate"
)

// Map turns a database/sql or driver error into a *redstate.Error, op naming what was
// attempted: nil stays nil; an error already carrying a redstate code is returned as is;
// sql.ErrNoRows is ENOTFOUND; a unique or primary-key violation is ECONFLICT; a database that
// cannot serve now (connection refused or lost, timeout, cancelled context, SQLite busy or
// locked, PostgreSQL shutting down, too many connections, serialization failure) is
// EUNAVAILABLE; anything else (a bad statement, a check violation) is EINTERNAL.
func Map(err error, op string) error {
	if err == nil {
		return nil
	}
	var re *redstate.Error
	if errors.As(err, &re) {
		return err
	}
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return redstate.Wrap(redstate.ENOTFOUND, err, op+": not found")
	case IsUniqueViolation(err):
		return redstate.Wrap(redstate.ECONFLICT, err, op+": already exists")
	case unavailable(err):
		return redstate.Wrap(redstate.EUNAVAILABLE, err, op+": the database is unavailable")
	}
	return redstate.Wrap(redstate.EINTERNAL, err, op+": unexpected database error")
}

// IsUniqueViolation reports whether err is a unique or primary-key constraint violation, on
// either engine.
func IsUniqueViolation(err error) bool {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return pg.Code == "23505"
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		c := se.Code()
		return c == sqlite3.SQLITE_CONSTRAINT_UNIQUE || c == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
	}
	return false
}

// unavailable reports whether err means "the database cannot serve this now".
func unavailable(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		switch pg.Code[:2] {
		case "08", "53", "57": // connection exception, insufficient resources, operator intervention
			return true
		}
		// serialization failure, deadlock, object in use (a replication slot still held by a
		// backend that is going away)
		return pg.Code == "40001" || pg.Code == "40P01" || pg.Code == "55006"
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return true
		}
	}
	return pgconn.SafeToRetry(err)
}
