// Package sqldb is redstate's SQL layer, shared by the blocks whose source of truth is a SQL
// database (the report flow's records, the feed's posts and follows): one way to open a
// database from a DSN, placeholders written once for every engine, numbered schema migrations
// per component, transactions, and driver errors mapped onto redstate's error codes.
//
// Three engines are supported:
//
//   - SQLite, the embedded default ("sqlite:<path>", or "sqlite::memory:" in tests), through the
//     pure-Go driver modernc.org/sqlite, so `go run ./cmd/redstate serve` needs no C toolchain
//     and no server. Files are opened in WAL mode with a 5 s busy timeout, foreign keys on,
//     and transactions that take the write lock when they begin (BEGIN IMMEDIATE).
//   - PostgreSQL for production ("postgres://…" or "postgresql://…"), through pgx's
//     database/sql driver.
//   - MySQL 8 or MariaDB 10.6+ ("mysql://…" or "mariadb://…"), through go-sql-driver/mysql:
//     sessions in UTC (time_zone '+00:00'), utf8mb4, strict ANSI_QUOTES sql_mode.
//
// Code writes `?` placeholders; DB.Rebind turns them into `$1, $2, …` for PostgreSQL and
// leaves them for SQLite and MySQL.
// docs/sql.md states the guarantees.
package sqldb
