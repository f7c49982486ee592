package sqldb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
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
	// MySQL is MySQL 8 or MariaDB 10.6+ (go-sql-driver/mysql).
	MySQL
)

// String returns "sqlite", "postgres" or "mysql".
func (d Dialect) String() string {
	switch d {
	case SQLite:
		return "sqlite"
	case Postgres:
		return "postgres"
	case MySQL:
		return "mysql"
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
//	mysql://user:pw@host:3306/db?tls=true             (or mariadb://) MySQL or MariaDB
//
// A MySQL DSN's query parameters are go-sql-driver/mysql's (tls, timeout, readTimeout, …);
// whatever they say, every connection parses times in UTC with the session time_zone '+00:00',
// talks utf8mb4, runs one statement per call, and uses the sql_mode of mysqlSQLMode.
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
	case strings.HasPrefix(dsn, "mysql://"), strings.HasPrefix(dsn, "mariadb://"):
		dialect = MySQL
		var cfg *mysql.Config
		if cfg, err = mysqlConfig(dsn); err != nil {
			return nil, err
		}
		var conn driver.Connector
		if conn, err = mysql.NewConnector(cfg); err == nil {
			db = sql.OpenDB(conn)
			db.SetMaxOpenConns(32)
			db.SetMaxIdleConns(8)
			db.SetConnMaxIdleTime(5 * time.Minute)
			// Bounded so that a pool follows a failover (DNS moved to the new primary) and
			// never meets the server's wait_timeout.
			db.SetConnMaxLifetime(30 * time.Minute)
		}
	default:
		return nil, redstate.Errorf(redstate.EINVALID, "unsupported database DSN %q: use sqlite:<path>, postgres://… or mysql://…", RedactDSN(dsn))
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

// mysqlSQLMode is the session sql_mode of every MySQL connection: strict (a value that does not
// fit is an error, never silently truncated) and ANSI_QUOTES, so that "name" is an identifier
// as on SQLite and PostgreSQL.
const mysqlSQLMode = "'ANSI_QUOTES,STRICT_ALL_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION'"

// mysqlConfig turns a mysql:// (or mariadb://) URL into go-sql-driver's configuration: user,
// password, host (port 3306 by default) and database from the URL, the driver's own parameters
// from the query, and then what redstate relies on forced: times parsed in UTC with the
// session time_zone '+00:00', utf8mb4, mysqlSQLMode, one statement per call, affected rows
// counting changed rows only. Errors: EINVALID.
func mysqlConfig(dsn string) (*mysql.Config, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return nil, redstate.Errorf(redstate.EINVALID, "unparsable MySQL DSN %s: want mysql://user:password@host:3306/database", RedactDSN(dsn))
	}
	db := strings.TrimPrefix(u.Path, "/")
	if db == "" || strings.Contains(db, "/") || u.Host == "" {
		return nil, redstate.Errorf(redstate.EINVALID, "MySQL DSN %s needs a host and a database: mysql://user:password@host:3306/database", RedactDSN(dsn))
	}
	cfg, err := mysql.ParseDSN("/?" + u.RawQuery)
	if err != nil {
		return nil, redstate.Wrap(redstate.EINVALID, err, "MySQL DSN "+RedactDSN(dsn)+" has a bad parameter")
	}
	cfg.User = u.User.Username()
	cfg.Passwd, _ = u.User.Password()
	cfg.Net = "tcp"
	cfg.Addr = u.Host
	if u.Port() == "" {
		cfg.Addr = net.JoinHostPort(u.Hostname(), "3306")
	}
	cfg.DBName = db
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	cfg.MultiStatements = false
	cfg.ClientFoundRows = false
	cfg.InterpolateParams = false
	if err := cfg.Apply(mysql.Charset("utf8mb4", "utf8mb4_general_ci")); err != nil {
		return nil, redstate.Wrap(redstate.EINVALID, err, "MySQL DSN "+RedactDSN(dsn))
	}
	cfg.Logger = &mysql.NopLogger{} // what it would print to stderr is also returned as an error
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["time_zone"] = "'+00:00'"
	cfg.Params["sql_mode"] = mysqlSQLMode
	return cfg, nil
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

// RedactDSN returns dsn with the password of a URL DSN replaced by "***", wherever a driver
// reads one: the user info (postgres://app:pw@host, mysql://app:pw@host) and the "password"
// query parameter. A URL DSN
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
