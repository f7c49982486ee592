// Package mysqlsource feeds the CDC index from a MySQL or MariaDB binary log: redstate
// registers as a replica and applies the row events of the followed tables, no Canal or
// Debezium in between.
//
// It uses go-mysql's replication.BinlogSyncer rather than its canal package: canal brings its
// own snapshot (mysqldump), position handling and schema tracker, where this source needs the
// snapshot's position, the position kept in Redis and applied in step with the index, and its
// own reconnection from that position; the syncer gives exactly the event stream. Its own
// retry is off: it resumes from the last event read, possibly mid-transaction, where the table
// maps are missing; the source reconnects from the last committed position instead.
//
// Versions are binlog coordinates, index.BinlogVersion(file number, end position of the rows
// event, row index in the event): they grow along the log, so a replay after a restart (the
// source resumes from the last position recorded after an applied batch, so it may read a
// batch again) is stale and harmless. A snapshot row read at position P has version (P's file,
// P, 0), older than every event after P.
//
// The initial snapshot reads the followed tables at a known position in one transaction: on
// MariaDB START TRANSACTION WITH CONSISTENT SNAPSHOT, whose binlog_snapshot_file and
// binlog_snapshot_position status give the position with no lock; on MySQL a short FLUSH
// TABLES WITH READ LOCK around SHOW MASTER STATUS (SHOW BINARY LOG STATUS on 8.4) and the
// start of the snapshot transaction. Rows are read in keyset order of the table's key, the
// last key recorded in Redis after every page; a restart during the snapshot resumes it after
// that key outside the snapshot transaction, which is still correct: every change after P is
// streamed afterwards with a newer version.
package mysqlsource

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/internal/lease"
	"github.com/redstate/redstate/internal/rediserr"
	"github.com/redstate/redstate/sqldb"
)

// Options configure a Source. Zero fields take the defaults stated on them.
type Options struct {
	// URL is the server, mysql://user:password@host:3306/ (required): the replica connection's
	// address and account.
	URL string
	// DB is a pool on the same server and account (required), for the checks, the schema and
	// the snapshot.
	DB *sqldb.DB
	// Redis keeps the position and the snapshot's progress (required).
	Redis redis.UniversalClient
	// ServerID is the replica's server id (default: random in [2^30, 2^32), chosen once).
	ServerID uint32
	// Tables are the followed tables, "db.table", each declared in the index (required).
	Tables []string
	// Flavor is index.FlavorMySQL, index.FlavorMariaDB or index.FlavorAuto (default auto:
	// from SELECT VERSION()).
	Flavor string
	// BatchRows bounds the changes applied at once (default 1000); a batch is also applied
	// when the stream pauses.
	BatchRows int
	// SnapshotPage is the snapshot's page size (default 1000).
	SnapshotPage int
	// ErrorDelay is the first wait after a failure, doubled up to MaxErrorDelay (defaults 1s
	// and 30s).
	ErrorDelay, MaxErrorDelay time.Duration
	// LeaseTTL is the binlog lease's time to live (default index.DefaultLeaseTTL, at least
	// index.MinLeaseTTL): one instance reads the binlog, renewing the lease every LeaseTTL/3;
	// the others try to take it every LeaseTTL/5, so one takes over within about LeaseTTL of
	// the reader's death.
	LeaseTTL time.Duration
	// Logger receives progress and failures. Default slog.Default().
	Logger *slog.Logger
}

// Position is a binary log coordinate: file name and byte offset.
type Position struct {
	File string
	Pos  uint32
}

// String is "file:pos", the form kept in Redis.
func (p Position) String() string { return p.File + ":" + strconv.FormatUint(uint64(p.Pos), 10) }

// ParsePosition reads "file:pos". Errors: EINVALID.
func ParsePosition(s string) (Position, error) {
	i := strings.LastIndexByte(s, ':')
	if i <= 0 {
		return Position{}, redstate.Errorf(redstate.EINVALID, "binlog position %q is not file:pos", s)
	}
	n, err := strconv.ParseUint(s[i+1:], 10, 32)
	if err != nil {
		return Position{}, redstate.Errorf(redstate.EINVALID, "binlog position %q is not file:pos", s)
	}
	return Position{File: s[:i], Pos: uint32(n)}, nil
}

// version is the index version of row index row of the event ending at pos in file.
func version(file string, pos uint32, row int) (index.Version, error) {
	n, err := index.BinlogFileNumber(file)
	if err != nil {
		return "", err
	}
	return index.BinlogVersion(n, uint64(pos), uint32(row)), nil
}

// Source streams a MySQL or MariaDB binary log into an Indexer.
type Source struct {
	ix   *index.Indexer
	opts Options
	log  *slog.Logger
	keys Keys
	addr struct {
		host, user, password string
		port                 uint16
	}
	flavor string
	// followed is the set of followed "db.table"; schemas their columns as last read (reset
	// by DDL).
	followed map[string]bool
	schemas  map[string][]column
	// SnapshotRows counts rows copied by the snapshot, Events the row changes applied from
	// the stream.
	SnapshotRows, Events atomic.Int64
	lagMillis            atomic.Int64
	position             atomic.Pointer[Position]
	// token is the binlog lease's token of the current session (read by the session's own
	// goroutine only); fence its fence while held, 0 otherwise.
	token string
	fence atomic.Int64
	// leases is the binlog lease (newLeader).
	leases lease.Leader
	// standby is set while another instance holds the lease.
	standby  atomic.Bool
	progress progress
}

// Keys returns the source's Redis keys.
func (s *Source) Keys() Keys { return s.keys }

// LagSeconds is the age of the last applied event when it was applied; 0 once the source has
// applied the whole log (as of its last listing, every LagPoll).
func (s *Source) LagSeconds() float64 { return float64(s.lagMillis.Load()) / 1000 }

// Position is the last position recorded in Redis by this instance (zero before any).
func (s *Source) Position() Position {
	if p := s.position.Load(); p != nil {
		return *p
	}
	return Position{}
}

// New returns a Source. Errors: EINVALID.
func New(ix *index.Indexer, opts Options) (*Source, error) {
	if opts.DB == nil || opts.DB.Dialect != sqldb.MySQL || opts.Redis == nil || len(opts.Tables) == 0 {
		return nil, redstate.Errorf(redstate.EINVALID, "mysql source: a MySQL database, a Redis client and at least one table are required")
	}
	u, err := url.Parse(opts.URL)
	if err != nil || (u.Scheme != "mysql" && u.Scheme != "mariadb") || u.Hostname() == "" {
		return nil, redstate.Errorf(redstate.EINVALID, "mysql source: the URL must be mysql://user:password@host:3306/")
	}
	s := &Source{ix: ix, followed: map[string]bool{}, schemas: map[string][]column{}}
	s.addr.host, s.addr.port, s.addr.user = u.Hostname(), 3306, u.User.Username()
	s.addr.password, _ = u.User.Password()
	if p := u.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil {
			return nil, redstate.Errorf(redstate.EINVALID, "mysql source: bad port %q", p)
		}
		s.addr.port = uint16(n)
	}
	for _, t := range opts.Tables {
		db, name, ok := strings.Cut(t, ".")
		if !ok {
			return nil, redstate.Errorf(redstate.EINVALID, "mysql source: table %q is not db.table", t)
		}
		if _, ok := ix.Table(db, name); !ok {
			return nil, redstate.Errorf(redstate.EINVALID, "mysql source: table %s is not declared in index.tables", t)
		}
		s.followed[t] = true
	}
	if opts.ServerID == 0 {
		opts.ServerID = 1<<30 + rand.Uint32N(3<<30)
	}
	if opts.Flavor == "" {
		opts.Flavor = index.FlavorAuto
	}
	if opts.BatchRows <= 0 {
		opts.BatchRows = 1000
	}
	if opts.SnapshotPage <= 0 {
		opts.SnapshotPage = 1000
	}
	if opts.ErrorDelay <= 0 {
		opts.ErrorDelay = time.Second
	}
	if opts.MaxErrorDelay < opts.ErrorDelay {
		opts.MaxErrorDelay = max(30*time.Second, opts.ErrorDelay)
	}
	if opts.LeaseTTL == 0 {
		opts.LeaseTTL = index.DefaultLeaseTTL
	}
	if opts.LeaseTTL < index.MinLeaseTTL {
		return nil, redstate.Errorf(redstate.EINVALID, "mysql source: the lease TTL must be at least %s, got %s", index.MinLeaseTTL, opts.LeaseTTL)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s.opts = opts
	s.log = opts.Logger.With("source", "mysql", "server_id", opts.ServerID)
	s.keys = ix.BlockKeys().MySQL()
	if s.leases, err = newLeader(opts.Redis, s.keys, opts.LeaseTTL); err != nil {
		return nil, err
	}
	return s, nil
}

// ErrPurged is the class of the error of a recorded position the server no longer has
// (errors.Is): the source cannot go on without a new snapshot (index resnapshot).
var ErrPurged = errors.New("binlog position purged")

// Run reads the binary log into the index until ctx ends (nil then), on one instance at a
// time: it takes the binlog lease (standby, trying again every LeaseTTL/5, while another
// instance holds it), snapshots the tables if no position is recorded, then streams, until the
// lease is lost (back to standby, trying again after LeaseTTL) or ctx ends (the lease is
// released). Failures (MySQL or
// Redis unavailable, a requirement not met, a purged position: ErrPurged) are logged and
// retried with back-off from the recorded position; a purged position stays an error until
// index resnapshot deletes it.
func (s *Source) Run(ctx context.Context) error {
	delay := s.opts.ErrorDelay
	standby := false
	for ctx.Err() == nil {
		l, ok, err := s.acquire(ctx)
		wait := s.opts.LeaseTTL / 5
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			standby = false
			s.standby.Store(false)
			s.log.Error("index mysql source failed; retrying", "err", err, "retry_in", delay.String())
			wait, delay = delay, min(2*delay, s.opts.MaxErrorDelay)
		case !ok:
			s.standby.Store(true)
			if !standby {
				s.log.Info("standby: another instance holds the binlog lease", "lease", s.keys.Lease)
				standby = true
			}
		default:
			// Back from reading (the lease lost): wait a whole TTL, so that an instance in
			// standby, which polls more often, takes over rather than the one that lost it.
			standby = false
			s.standby.Store(false)
			delay = s.lead(ctx, l, delay)
			wait = s.opts.LeaseTTL
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
	return nil
}

func (s *Source) run(ctx context.Context, progressed *bool) error {
	if err := s.Check(ctx); err != nil {
		return err
	}
	posText, err := s.opts.Redis.Get(ctx, s.keys.Position).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return rediserr.Map(err, "read binlog position")
	}
	var from Position
	if posText != "" {
		if from, err = ParsePosition(posText); err != nil {
			return err
		}
	} else if from, err = s.snapshot(ctx); err != nil {
		return err
	}
	if err := s.checkNotPurged(ctx, from); err != nil {
		return err
	}
	return s.stream(ctx, from, progressed)
}

// Check verifies the server's requirements: the binary log on in ROW format with FULL row
// images, the account's right to read the binlog position, a server id of its own; it
// detects the flavor when auto. Errors name the setting or grant to change.
func (s *Source) Check(ctx context.Context) error {
	var version, format, image string
	var logBin, serverID int64
	err := s.opts.DB.QueryRowContext(ctx, "SELECT VERSION(), @@log_bin, @@GLOBAL.binlog_format, @@GLOBAL.binlog_row_image, @@server_id").Scan(&version, &logBin, &format, &image, &serverID)
	if err != nil {
		return sqldb.Map(err, "mysql source: read the server's binlog settings")
	}
	s.flavor = s.opts.Flavor
	if s.flavor == index.FlavorAuto {
		s.flavor = index.FlavorMySQL
		if strings.Contains(strings.ToLower(version), "mariadb") {
			s.flavor = index.FlavorMariaDB
		}
	}
	var problems []string
	if logBin != 1 {
		problems = append(problems, "the binary log is off (start the server with --log-bin)")
	}
	if !strings.EqualFold(format, "ROW") {
		problems = append(problems, fmt.Sprintf("binlog_format is %s, ROW is required (SET GLOBAL binlog_format = 'ROW' and in the server's configuration)", format))
	}
	if !strings.EqualFold(image, "FULL") {
		problems = append(problems, fmt.Sprintf("binlog_row_image is %s, FULL is required (SET GLOBAL binlog_row_image = 'FULL' and in the server's configuration)", image))
	}
	if serverID == int64(s.opts.ServerID) {
		problems = append(problems, fmt.Sprintf("index.mysql.server-id %d is the server's own server_id: choose another", s.opts.ServerID))
	}
	if len(problems) > 0 {
		return redstate.Errorf(redstate.EINVALID, "mysql source: %s", strings.Join(problems, "; "))
	}
	if _, err := s.masterStatus(ctx, s.opts.DB); err != nil {
		return err
	}
	if err := s.checkReplicationGrant(ctx); err != nil {
		return err
	}
	if err := s.checkCompression(ctx); err != nil {
		return err
	}
	if taken, err := s.serverIDTaken(ctx); err == nil && taken {
		return redstate.Errorf(redstate.EINVALID, "mysql source: server id %d is used by another replica of this server (SHOW SLAVE HOSTS): set a unique index.mysql.server-id", s.opts.ServerID)
	}
	return nil
}

// masterStatus reads the current binlog position on q (SHOW MASTER STATUS; SHOW BINARY LOG
// STATUS on MySQL 8.4, where the former is gone).
func (s *Source) masterStatus(ctx context.Context, q querier) (Position, error) {
	pos, err := firstPosition(ctx, q, "SHOW MASTER STATUS")
	if err != nil && s.flavor == index.FlavorMySQL {
		pos, err = firstPosition(ctx, q, "SHOW BINARY LOG STATUS")
	}
	if err != nil {
		return Position{}, redstate.Wrap(redstate.EINVALID, err,
			"mysql source: cannot read the binlog position; the account needs REPLICATION CLIENT (MariaDB: BINLOG MONITOR) and REPLICATION SLAVE")
	}
	if pos.File == "" {
		return Position{}, redstate.Errorf(redstate.EINVALID, "mysql source: the server reports no binary log (start it with --log-bin)")
	}
	return pos, nil
}

// firstPosition runs a statement whose first two columns are a binlog file and position.
func firstPosition(ctx context.Context, q querier, stmt string) (Position, error) {
	rows, err := q.QueryContext(ctx, stmt)
	if err != nil {
		return Position{}, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil || len(cols) < 2 {
		return Position{}, fmt.Errorf("%s: unexpected columns %v: %v", stmt, cols, err)
	}
	if !rows.Next() {
		return Position{}, rows.Err()
	}
	vals := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return Position{}, err
	}
	n, err := strconv.ParseUint(string(vals[1]), 10, 32)
	if err != nil {
		return Position{}, fmt.Errorf("%s: position %q: %w", stmt, vals[1], err)
	}
	return Position{File: string(vals[0]), Pos: uint32(n)}, nil
}

// serverIDTaken reports whether a registered replica already uses the server id.
func (s *Source) serverIDTaken(ctx context.Context) (bool, error) {
	rows, err := s.opts.DB.QueryContext(ctx, "SHOW SLAVE HOSTS")
	if err != nil {
		return false, err
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	vals := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return false, err
		}
		if len(vals) > 0 && string(vals[0]) == strconv.FormatUint(uint64(s.opts.ServerID), 10) {
			return true, nil
		}
	}
	return false, rows.Err()
}

// checkNotPurged fails with ErrPurged when from's file is no longer among the server's logs.
func (s *Source) checkNotPurged(ctx context.Context, from Position) error {
	rows, err := s.opts.DB.QueryContext(ctx, "SHOW BINARY LOGS")
	if err != nil {
		return redstate.Wrap(redstate.EINVALID, sqldb.Map(err, "SHOW BINARY LOGS"), "mysql source: cannot list the binary logs (the account needs REPLICATION CLIENT; MariaDB: BINLOG MONITOR)")
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	vals := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return sqldb.Map(err, "SHOW BINARY LOGS")
		}
		if string(vals[0]) == from.File {
			return nil
		}
	}
	if err := rows.Err(); err != nil {
		return sqldb.Map(err, "SHOW BINARY LOGS")
	}
	return s.purged(from)
}

// purged is the ErrPurged error for from, naming how to snapshot again.
func (s *Source) purged(from Position) error {
	return fmt.Errorf("%w: the server no longer has binlog %s (purged); the index cannot catch up from it: "+
		"take a new snapshot with redstate index resnapshot --source mysql --yes (the running reader starts it, no restart needed), "+
		"then remove the rows deleted meanwhile with redstate index verify --source mysql --repair",
		ErrPurged, from)
}
