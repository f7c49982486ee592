package sqldb

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	_ "modernc.org/sqlite"             // registers the "sqlite" database/sql driver

	"github.com/redstate/redstate"
)

// Dialect is the SQL engine behind a DB.
type Dialect int

const (
	// SQLite is the embedded engine (modernc.org/sqlite).
	SQLite Dialect = iota + 1
	// Postgres is PostgreSQL (pgx).
	Postgres
)

// String returns "sqlite" or "postgres".
func (d Dialect) String() string {
	switch d {
	case SQLite:
		return "sqlite"
	case Postgres:
		return "postgres"
	}
	return fmt.Sprintf("Dialect(%d)", int(d))
}

// sqliteMaxConns bounds an SQLite file's pool: WAL lets readers run beside the one writer;
// more connections only queue on the write lock.
const sqliteMaxConns = 4

// DB is an open database: a *sql.DB plus the engine it talks to. It is safe for concurrent
// use. Close it when done.
type DB struct {
	*sql.DB
	// Dialect is the engine.
	Dialect Dialect
	// DSN is the data source name with any password replaced by "***" (RedactDSN).
	DSN string
}

// Open opens and pings the database named by dsn:
//
//	sqlite:<path>            an SQLite file, created if missing (its directory must exist)
//	sqlite::memory:          a private in-memory SQLite database (one connection)
//	postgres://user:pw@host:port/db?sslmode=disable   (or postgresql://) PostgreSQL via pgx
//
// Errors: EINVALID (unknown scheme, empty path), EUNAVAILABLE (the database does not answer;
// the message names the DSN with its password redacted).
func Open(ctx context.Context, dsn string) (*DB, error) {
	var (
		db      *sql.DB
		dialect Dialect
		err     error
	)
	switch {
	case strings.HasPrefix(dsn, "sqlite:"):
		dialect = SQLite
		path := strings.TrimPrefix(dsn, "sqlite:")
		if path == "" {
			return nil, redstate.Errorf(redstate.EINVALID, "sqlite DSN needs a path: sqlite:/var/lib/redstate/redstate.db or sqlite::memory:")
		}
		db, err = sql.Open("sqlite", sqliteDSN(path))
		if err == nil {
			if path == ":memory:" {
				db.SetMaxOpenConns(1) // every connection would get its own empty database
			} else {
				db.SetMaxOpenConns(sqliteMaxConns)
			}
			db.SetConnMaxIdleTime(0)
		}
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		dialect = Postgres
		db, err = sql.Open("pgx", dsn)
		if err == nil {
			db.SetMaxOpenConns(32)
			db.SetMaxIdleConns(8)
			db.SetConnMaxIdleTime(5 * time.Minute)
		}
	default:
		return nil, redstate.Errorf(redstate.EINVALID, "unsupported database DSN %q: use sqlite:<path> or postgres://…", RedactDSN(dsn))
	}
	if err != nil {
		return nil, redstate.Wrap(redstate.EINVALID, err, fmt.Sprintf("open %s", RedactDSN(dsn)))
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		_ = db.Close()
		return nil, redstate.Wrap(redstate.EUNAVAILABLE, err, fmt.Sprintf("database %s does not answer", RedactDSN(dsn)))
	}
	return &DB{DB: db, Dialect: dialect, DSN: RedactDSN(dsn)}, nil
}

// sqliteDSN is modernc's DSN for path: WAL (file databases), busy timeout 5 s, foreign keys,
// and BEGIN IMMEDIATE for every transaction, so that two writers queue on the busy timeout
// instead of failing with SQLITE_BUSY when a read transaction upgrades to a write.
func sqliteDSN(path string) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_pragma", "foreign_keys(1)")
	if path != ":memory:" {
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous(NORMAL)")
	}
	q.Set("_txlock", "immediate")
	return "file:" + path + "?" + q.Encode()
}

// RedactDSN returns dsn with the password of a URL DSN replaced by "***", wherever pgx reads
// one: the user info (postgres://app:pw@host) and the "password" query parameter. A URL DSN
// that cannot be parsed is reduced to its scheme, since where its password sits is unknown.
// Other DSNs are returned unchanged (an SQLite path holds no secret).
func RedactDSN(dsn string) string {
	scheme, _, isURL := strings.Cut(dsn, "://")
	if !isURL {
		return dsn
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return scheme + "://(unparsable DSN)"
	}
	const mask = "***"
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), mask)
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", mask)
		u.RawQuery = q.Encode()
	}
	return strings.ReplaceAll(u.String(), "%2A%2A%2A", mask)
}
