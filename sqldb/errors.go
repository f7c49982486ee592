package sqldb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"net"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/redstate/redstate"
)

// Map turns a database/sql or driver error into a *redstate.Error, op naming what was
// attempted: nil stays nil; an error already carrying a redstate code is returned as is;
// sql.ErrNoRows is ENOTFOUND; a unique or primary-key violation is ECONFLICT; a database that
// cannot serve now (connection refused or lost, timeout, cancelled context, SQLite busy or
// locked, PostgreSQL shutting down, too many connections, serialization failure, MySQL lock
// wait timeout or deadlock) is EUNAVAILABLE, and so is a write refused by a read-only server
// (a replica, or the old primary after a failover), with a message saying so; anything else
// (a bad statement, a check violation) is EINTERNAL.
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
	case readOnly(err):
		return redstate.Wrap(redstate.EUNAVAILABLE, err, op+": the database is read-only (a replica, or the old primary after a failover): database.url must name the writable primary")
	case unavailable(err):
		return redstate.Wrap(redstate.EUNAVAILABLE, err, op+": the database is unavailable")
	}
	return redstate.Wrap(redstate.EINTERNAL, err, op+": unexpected database error")
}

// MySQL server error numbers Map knows.
const (
	myDupEntry          = 1062 // ER_DUP_ENTRY
	myDupEntryWithKey   = 1586 // ER_DUP_ENTRY_WITH_KEY_NAME
	myTooManyConns      = 1040 // ER_CON_COUNT_ERROR
	myServerShutdown    = 1053 // ER_SERVER_SHUTDOWN
	myLockWaitTimeout   = 1205 // ER_LOCK_WAIT_TIMEOUT
	myDeadlock          = 1213 // ER_LOCK_DEADLOCK
	myOptionPrevents    = 1290 // ER_OPTION_PREVENTS_STATEMENT (--read-only, among others)
	myReadOnlyTx        = 1792 // ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION
	myReadOnlyMode      = 1836 // ER_READ_ONLY_MODE
	myConnectionKilled  = 1927 // ER_CONNECTION_KILLED (MariaDB)
	myServerGone        = 2006 // CR_SERVER_GONE_ERROR
	myServerLost        = 2013 // CR_SERVER_LOST
	myClientIdleTimeout = 4031 // ER_CLIENT_INTERACTION_TIMEOUT (MySQL 8)
)

// IsUniqueViolation reports whether err is a unique or primary-key constraint violation, on
// any engine.
func IsUniqueViolation(err error) bool {
	var my *mysql.MySQLError
	if errors.As(err, &my) {
		return my.Number == myDupEntry || my.Number == myDupEntryWithKey
	}
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

// readOnly reports whether err is a MySQL server refusing a write because it is read-only.
func readOnly(err error) bool {
	var my *mysql.MySQLError
	if !errors.As(err, &my) {
		return false
	}
	switch my.Number {
	case myReadOnlyTx, myReadOnlyMode:
		return true
	case myOptionPrevents:
		return strings.Contains(strings.ToLower(my.Message), "read-only") || strings.Contains(strings.ToLower(my.Message), "read_only")
	}
	return false
}

// unavailable reports whether err means "the database cannot serve this now".
func unavailable(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) ||
		errors.Is(err, mysql.ErrInvalidConn) {
		return true
	}
	var my *mysql.MySQLError
	if errors.As(err, &my) {
		switch my.Number {
		case myTooManyConns, myServerShutdown, myLockWaitTimeout, myDeadlock, myConnectionKilled,
			myServerGone, myServerLost, myClientIdleTimeout:
			return true
		}
		return false
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
