package feed

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redstate/redstate/internal/keyspace"
	"github.com/redstate/redstate/internal/resilience"
	"github.com/redstate/redstate/sqldb"
)

// Defaults of the feed section of the configuration.
const (
	// DefaultFanOutQueue is the job queue of fan-outs.
	DefaultFanOutQueue = "feed:fanout"
	// DefaultFanOutConcurrency is how many fan-out jobs run at once per process.
	DefaultFanOutConcurrency = 2
	// DefaultBreakerWait is how long the feed's breaker stays open before Redis is probed
	// again: shorter than the build-status registry's, since the feed's fallback (SQL) is slower.
	DefaultBreakerWait = 5 * time.Second
)

// Config is the feed section of redstate's configuration (feed.*): what the composition root
// builds the feed from. Options is the service's view of it.
type Config struct {
	// Enabled turns the feed routes on (default true).
	Enabled bool `koanf:"enabled"`
	// KeyPrefix is put before every feed key after the namespace (default "": the seed's names).
	KeyPrefix string `koanf:"key-prefix"`
	// HybridThreshold: authors with more followers get no fan-out; their followers' unread
	// state is computed on read (default DefaultHybridThreshold). At least 1 in the
	// configuration (Options also accepts a negative value, "every author is hybrid", for
	// programs and tests).
	HybridThreshold int64 `koanf:"hybrid-threshold"`
	// FanOutQueue is the job queue of fan-outs (default DefaultFanOutQueue).
	FanOutQueue string `koanf:"fanout-queue"`
	// FanOutConcurrency is how many fan-out jobs run at once (default DefaultFanOutConcurrency).
	FanOutConcurrency int `koanf:"fanout-concurrency"`
	// Resilience is the circuit breaker in front of the feed's Redis calls (the same keys as
	// publish.build-status.resilience's breaker; no policy: the feed always falls back to
	// SQL): while it is open, reads are answered from SQL at once. Default: the breaker's
	// defaults with a wait of DefaultBreakerWait.
	Resilience resilience.BreakerConfig `koanf:"resilience"`
	// RepairInterval is how often the Redis state that missed writes (durable repair marks in
	// SQL) is repaired, and Redis probed while the breaker is open (default
	// DefaultRepairInterval).
	RepairInterval time.Duration `koanf:"repair-interval"`
	// SQL maps the feed's posts and follows onto tables and columns (default: redstate's own
	// blog and follow tables, which it creates and writes).
	SQL SQLConfig `koanf:"sql"`
}

// SQLConfig maps the feed's post and follow model onto SQL tables (feed.sql.*), so that a
// team's existing tables (the blog's posts and follows) are read in place. redstate's own tables
// (blog_read, blog_like, feed_repair) keep their names.
type SQLConfig struct {
	// OwnsTables says whether redstate owns the posts and follows tables (default true): it
	// creates them when missing and writes them (publish, follow, like). False: the tables are
	// the team's application's; redstate checks at start that they have the mapped columns,
	// never issues DDL on them and never writes them (see docs/feed.md, "Existing tables").
	OwnsTables bool `koanf:"owns-tables"`
	// TimeZone is the zone of date-time columns without one (DATETIME, TIMESTAMP): an IANA
	// name such as Asia/Shanghai (default UTC). Integer time columns are Unix microseconds.
	TimeZone string `koanf:"time-zone"`
	// Posts maps the post model (default: table blog with the seed's column names).
	Posts PostsTable `koanf:"posts"`
	// Follows maps the follow relation (default: table follow).
	Follows FollowsTable `koanf:"follows"`
}

// PostsTable names the posts table and its columns (feed.sql.posts.*).
type PostsTable struct {
	// Table is the table's name (default blog).
	Table string `koanf:"table"`
	// ID is the post id column, an integer key (default id).
	ID string `koanf:"id"`
	// Author is the author's user id column (default user_id).
	Author string `koanf:"author"`
	// Title is the title column (default title).
	Title string `koanf:"title"`
	// Content is the content column (default content).
	Content string `koanf:"content"`
	// Images is the images column: a JSON array or comma-separated URLs (default images).
	Images string `koanf:"images"`
	// Liked is the like count column (default liked).
	Liked string `koanf:"liked"`
	// Created is the creation time column (default create_time).
	Created string `koanf:"created"`
	// Updated is the update time column (default update_time).
	Updated string `koanf:"updated"`
}

// FollowsTable names the follows table and its columns (feed.sql.follows.*).
type FollowsTable struct {
	// Table is the table's name (default follow).
	Table string `koanf:"table"`
	// Follower is the following user's id column (default follower_id).
	Follower string `koanf:"follower"`
	// Author is the followed author's id column (default author_id).
	Author string `koanf:"author"`
	// Created is the column of when the follow began (default since).
	Created string `koanf:"created"`
}

// OwnTables are the feed's own tables: redstate always creates and writes them, whatever
// feed.sql says.
var OwnTables = []string{"blog_read", "blog_like", "feed_repair"}

// DefaultSQLConfig returns redstate's own tables: blog and follow, owned.
func DefaultSQLConfig() SQLConfig {
	return SQLConfig{OwnsTables: true, TimeZone: "UTC",
		Posts: PostsTable{Table: "blog", ID: "id", Author: "user_id", Title: "title", Content: "content", Images: "images",
			Liked: "liked", Created: "create_time", Updated: "update_time"},
		Follows: FollowsTable{Table: "follow", Follower: "follower_id", Author: "author_id", Created: "since"}}
}

// IsDefault reports whether c is DefaultSQLConfig: redstate's own schema, migrated as before
// the mapping existed.
func (c SQLConfig) IsDefault() bool { return c == DefaultSQLConfig() }

// Location returns TimeZone's location (UTC when empty). Errors: an unknown zone.
func (c SQLConfig) Location() (*time.Location, error) {
	if c.TimeZone == "" {
		return time.UTC, nil
	}
	return time.LoadLocation(c.TimeZone)
}

// PostColumns returns the posts table's columns by key (feed.sql.posts.<key>), in a fixed
// order.
func (c SQLConfig) PostColumns() [][2]string {
	p := c.Posts
	return [][2]string{{"id", p.ID}, {"author", p.Author}, {"title", p.Title}, {"content", p.Content}, {"images", p.Images},
		{"liked", p.Liked}, {"created", p.Created}, {"updated", p.Updated}}
}

// FollowColumns returns the follows table's columns by key (feed.sql.follows.<key>).
func (c SQLConfig) FollowColumns() [][2]string {
	f := c.Follows
	return [][2]string{{"follower", f.Follower}, {"author", f.Author}, {"created", f.Created}}
}

// Validate reports every problem of feed.sql at once, each naming its key: every table and
// column named by an identifier (^[A-Za-z_][A-Za-z0-9_]{0,63}$), the tables distinct and
// none of OwnTables, the time zone known.
func (c SQLConfig) Validate() error {
	var errs []error
	ident := func(key, v string) {
		if !sqldb.ValidIdent(v) {
			errs = append(errs, fmt.Errorf("%s: must be a table or column name matching ^[A-Za-z_][A-Za-z0-9_]{0,63}$, got %q", key, v))
		}
	}
	ident("feed.sql.posts.table", c.Posts.Table)
	for _, kv := range c.PostColumns() {
		ident("feed.sql.posts."+kv[0], kv[1])
	}
	ident("feed.sql.follows.table", c.Follows.Table)
	for _, kv := range c.FollowColumns() {
		ident("feed.sql.follows."+kv[0], kv[1])
	}
	if strings.EqualFold(c.Posts.Table, c.Follows.Table) {
		errs = append(errs, fmt.Errorf("feed.sql.follows.table: %q is also feed.sql.posts.table", c.Follows.Table))
	}
	for _, own := range OwnTables {
		for key, t := range map[string]string{"feed.sql.posts.table": c.Posts.Table, "feed.sql.follows.table": c.Follows.Table} {
			if strings.EqualFold(t, own) {
				errs = append(errs, fmt.Errorf("%s: %q is one of redstate's own feed tables (%s)", key, t, strings.Join(OwnTables, ", ")))
			}
		}
	}
	if _, err := c.Location(); err != nil {
		errs = append(errs, fmt.Errorf("feed.sql.time-zone: %v", err))
	}
	return errors.Join(errs...)
}

// DefaultConfig returns the feed section's defaults.
func DefaultConfig() Config {
	breaker := resilience.DefaultBreakerConfig()
	breaker.WaitDurationInOpenState = DefaultBreakerWait
	return Config{Enabled: true, HybridThreshold: DefaultHybridThreshold, FanOutQueue: DefaultFanOutQueue,
		FanOutConcurrency: DefaultFanOutConcurrency, RepairInterval: DefaultRepairInterval, SQL: DefaultSQLConfig(),
		Resilience: breaker}
}

// Validate reports every problem of the section at once, each naming its key. The fan-out
// queue's name and its overlap with other queues are checked by the configuration, which
// knows every queue.
func (c Config) Validate() error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if c.HybridThreshold < 1 {
		add("feed.hybrid-threshold", "must be at least 1, got %d", c.HybridThreshold)
	}
	if c.FanOutConcurrency < 1 {
		add("feed.fanout-concurrency", "must be at least 1, got %d", c.FanOutConcurrency)
	}
	if c.KeyPrefix != "" {
		if err := keyspace.CheckPrefix(c.KeyPrefix); err != nil {
			add("feed.key-prefix", "%s", err)
		}
	}
	if c.RepairInterval <= 0 {
		add("feed.repair-interval", "must be positive, got %s", c.RepairInterval)
	}
	errs = append(errs, c.Resilience.ValidateAt("feed.resilience."), c.SQL.Validate())
	return errors.Join(errs...)
}
