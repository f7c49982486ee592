package indexbench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/bench"
	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/mysqlsource"
	"github.com/redstate/redstate/redisconn"
	"github.com/redstate/redstate/sqldb"
)

// MySQLOptions configure RunMySQL. Zero values take the defaults noted.
type MySQLOptions struct {
	// Target is the Redis client and the progress writer (Clients is not used).
	bench.Target
	// URL is the server, mysql://user:password@host:port/ (required): an account that may
	// create a database and read the binary log (REPLICATION SLAVE, REPLICATION CLIENT).
	URL string
	// Rows is the number of rows of the bulk (default 200,000): the bulk changes 2.1 × Rows
	// rows.
	Rows int
	// Batch is the changes applied at once by both readers (default: the source's, 1000).
	Batch int
	// Rate is the lag phase's target of row changes per second (default 5,000), TxnRows the
	// rows each of its transactions changes (default 10), Duration its length (default 20s).
	Rate, TxnRows int
	Duration      time.Duration
}

// MySQLMeasurements are what RunMySQL measured; a phase not reached is zero.
type MySQLMeasurements struct {
	// Bulk is end-to-end changes/s of the bulk, each reader alone streaming it live; CatchUp
	// changes/s of each reader alone reading the same binlog range afterwards.
	Bulk, CatchUp Measurement
	// SQLSeconds is how long MariaDB took to execute the bulk (the live bulk cannot be faster).
	SQLSeconds float64
	// Lag is ours at a steady rate.
	Lag LagMeasurement
}

// LagMeasurement is commit-acknowledged → visible in the index at a steady write rate.
type LagMeasurement struct {
	// Rate is the achieved changes/s; Samples the changes timed.
	Rate    float64
	Samples int
	// P50, P99 and Max are the lag's percentiles.
	P50, P99, Max time.Duration
}

// ResultLine is RESULT index.mysql.lag rate=<changes/s> p50=<ms> p99=<ms> max=<ms> samples=<n>.
func (l LagMeasurement) ResultLine() string {
	return fmt.Sprintf("RESULT index.mysql.lag rate=%.0f p50=%.3f p99=%.3f max=%.3f samples=%d",
		l.Rate, millis(l.P50), millis(l.P99), millis(l.Max), l.Samples)
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

var _ bench.Printer = MySQLMeasurements{}

// Print implements bench.Printer: a summary, then a RESULT line per phase measured.
func (m MySQLMeasurements) Print(w io.Writer) error {
	var lines []string
	for _, c := range []Measurement{m.Bulk, m.CatchUp} {
		if c.Name == "" {
			continue
		}
		if _, err := fmt.Fprintf(w, "%-20s ours %10.0f/s   transfer %10.0f/s   (%d row changes)\n", c.Name, c.Ours, c.Baseline, c.Events); err != nil {
			return err
		}
		lines = append(lines, c.ResultLine())
	}
	if m.SQLSeconds > 0 {
		if _, err := fmt.Fprintf(w, "%-20s MariaDB executed the bulk in %.2fs\n", "", m.SQLSeconds); err != nil {
			return err
		}
	}
	if m.Lag.Samples > 0 {
		if _, err := fmt.Fprintf(w, "%-20s %.0f changes/s: p50 %.3f ms, p99 %.3f ms, max %.3f ms (%d samples)\n",
			"index.mysql.lag", m.Lag.Rate, millis(m.Lag.P50), millis(m.Lag.P99), millis(m.Lag.Max), m.Lag.Samples); err != nil {
			return err
		}
		lines = append(lines, m.Lag.ResultLine())
	}
	return bench.PrintLines(w, lines)
}

// mysqlEnv is a run's shared state: the server, its bench database and table, Redis.
type mysqlEnv struct {
	opts   MySQLOptions
	db     *sqldb.DB
	name   string // the bench database
	spec   index.TableSpec
	prefix string
	// syncer is the replica connection's address and account (ours parses the URL itself).
	host, user, password string
	port                 uint16
	flavor               string
	log                  *slog.Logger
	cluster              bool
}

// table is the bench table's qualified name.
func (e *mysqlEnv) table() string { return "`" + e.name + "`.items" }

// RunMySQL benchmarks the MySQL binlog source (index/mysqlsource) against the transfer
// baseline on a database of its own on opts.URL's server, dropped at the end with the keys.
func RunMySQL(ctx context.Context, opts MySQLOptions) (MySQLMeasurements, error) {
	var out MySQLMeasurements
	if err := opts.Prepare("indexbench mysql", 1); err != nil {
		return out, err
	}
	bench.Default(&opts.Rows, 200000)
	bench.Default(&opts.Batch, 1000)
	bench.Default(&opts.Rate, 5000)
	bench.Default(&opts.TxnRows, 10)
	bench.Default(&opts.Duration, 20*time.Second)
	e, err := openMySQL(ctx, opts)
	if err != nil {
		return out, err
	}
	defer e.close(ctx)
	defer opts.Cleanup(ctx, e.prefix, 2*time.Minute)
	if e.cluster {
		defer opts.Cleanup(ctx, "{"+e.prefix, 2*time.Minute)
	}
	if err := e.bulkPhase(ctx, &out); err != nil {
		return out, err
	}
	lag, err := e.lagPhase(ctx)
	out.Lag = lag
	return out, err
}

// openMySQL connects, detects the flavor and creates the bench database and table.
func openMySQL(ctx context.Context, opts MySQLOptions) (*mysqlEnv, error) {
	u, err := url.Parse(opts.URL)
	if err != nil || (u.Scheme != "mysql" && u.Scheme != "mariadb") || u.Hostname() == "" {
		return nil, redstate.Errorf(redstate.EINVALID, "bench index --source mysql: --mysql-url must be mysql://user:password@host:port/")
	}
	e := &mysqlEnv{opts: opts, host: u.Hostname(), port: 3306, user: u.User.Username(), prefix: bench.Namespace(),
		cluster: redisconn.IsCluster(opts.Client), log: slog.New(slog.NewTextHandler(progressOrDiscard(opts.Progress), &slog.HandlerOptions{Level: slog.LevelWarn}))}
	e.password, _ = u.User.Password()
	if p := u.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil {
			return nil, redstate.Errorf(redstate.EINVALID, "bench index --source mysql: bad port %q", p)
		}
		e.port = uint16(n)
	}
	if e.db, err = sqldb.Open(ctx, mysqlsource.SQLURL(opts.URL)); err != nil {
		return nil, err
	}
	var version string
	if err := e.db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		_ = e.db.Close()
		return nil, sqldb.Map(err, "bench: SELECT VERSION()")
	}
	e.flavor = index.FlavorMySQL
	if strings.Contains(strings.ToLower(version), "mariadb") {
		e.flavor = index.FlavorMariaDB
	}
	e.name = strings.ReplaceAll(e.prefix, "-", "_")
	e.spec = table(e.cluster)
	e.spec.DB = e.name
	for _, q := range []string{
		"CREATE DATABASE `" + e.name + "` CHARACTER SET utf8mb4",
		"CREATE TABLE " + e.table() + " (id bigint PRIMARY KEY, lastAddrId int NOT NULL, categoryId int NOT NULL, brandId int NOT NULL, name varchar(64) NOT NULL, yn int NOT NULL DEFAULT 1)",
	} {
		if _, err := e.db.ExecContext(ctx, q); err != nil {
			e.close(ctx)
			return nil, sqldb.Map(err, "bench: "+q)
		}
	}
	opts.Progressf("mysql: %s (%s), bench database %s\n", version, e.flavor, e.name)
	return e, nil
}

// progressOrDiscard is w, or io.Discard when nil.
func progressOrDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// close drops the bench database and closes the pool.
func (e *mysqlEnv) close(ctx context.Context) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if _, err := e.db.ExecContext(cctx, "DROP DATABASE IF EXISTS `"+e.name+"`"); err != nil {
		e.opts.Progressf("cleanup: drop database %s: %v\n", e.name, err)
	} else {
		e.opts.Progressf("cleanup: dropped database %s\n", e.name)
	}
	_ = e.db.Close()
}

// position is the server's current binlog position.
func (e *mysqlEnv) position(ctx context.Context) (mysqlsource.Position, error) {
	var file string
	var pos uint32
	rows, err := e.db.QueryContext(ctx, "SHOW MASTER STATUS")
	if err != nil {
		return mysqlsource.Position{}, sqldb.Map(err, "bench: SHOW MASTER STATUS")
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	if !rows.Next() || len(cols) < 2 {
		return mysqlsource.Position{}, redstate.Errorf(redstate.EINVALID, "bench: SHOW MASTER STATUS returned no binary log (start the server with --log-bin)")
	}
	dest := make([]any, len(cols))
	dest[0], dest[1] = &file, &pos
	for i := 2; i < len(dest); i++ {
		dest[i] = new(any)
	}
	if err := rows.Scan(dest...); err != nil {
		return mysqlsource.Position{}, sqldb.Map(err, "bench: SHOW MASTER STATUS")
	}
	return mysqlsource.Position{File: file, Pos: pos}, nil
}

// reached reports whether p is at or after end.
func reached(p, end mysqlsource.Position) bool {
	if p.File == "" {
		return false
	}
	a, err1 := index.BinlogFileNumber(p.File)
	b, err2 := index.BinlogFileNumber(end.File)
	if err1 != nil || err2 != nil || a != b {
		return err1 == nil && err2 == nil && a > b
	}
	return p.Pos >= end.Pos
}
