package index

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/redact"
)

// Defaults of the sources' settings (index/streamsource, index/pgsource and Config).
const (
	// DefaultStreamGroup is the consumer group of the Redis Streams source.
	DefaultStreamGroup = "redstate-index"
	// DefaultClaimIdle is how long a stream entry stays pending at a dead consumer before it is
	// claimed.
	DefaultClaimIdle = 30 * time.Second
	// DefaultStreamNullValue is the value Debezium Server's Redis sink writes for a tombstone
	// (its debezium.sink.redis.null.value's default).
	DefaultStreamNullValue = "default"
	// DefaultSlot is the replication slot of the PostgreSQL source.
	DefaultSlot = "redstate_index"
	// DefaultLeaseTTL is the MySQL source's binlog lease TTL: another instance takes over
	// within about that long after the reader's death.
	DefaultLeaseTTL = 5 * time.Second
	// MinLeaseTTL is the shortest binlog lease TTL accepted.
	MinLeaseTTL = time.Second
)

// Logical decoding plugins of PostgresConfig.Plugin.
const (
	// PluginPgoutput is PostgreSQL's built-in plugin, streamed over the replication protocol.
	PluginPgoutput = "pgoutput"
	// PluginWal2JSON is the wal2json plugin (format version 2), read with SQL.
	PluginWal2JSON = "wal2json"
)

// Config is the index's configuration section (index.*): the key layout, the
// declared tables and the two change sources.
type Config struct {
	// KeyPrefix is the key prefix (default DefaultPrefix, the seed's).
	KeyPrefix string `koanf:"key-prefix"`
	// VersionTTL is how long a deleted row's version key (its tombstone) and a truncate key live
	// after the change that wrote them (default 720h, the seed's 30 days). The version key of a
	// row in the index holds its relation and has no TTL.
	VersionTTL time.Duration `koanf:"version-ttl"`
	// DeadLetterMax bounds the list of changes that could not be applied (default 10000).
	DeadLetterMax int `koanf:"dead-letter-max"`
	// Tables are the indexed tables (none: the index routes answer 404).
	Tables []TableSpec `koanf:"tables"`
	// Streams feeds the index from Redis Streams (Debezium Server's Redis sink).
	Streams StreamsConfig `koanf:"streams"`
	// Postgres feeds the index from PostgreSQL logical decoding (pgoutput or wal2json).
	Postgres PostgresConfig `koanf:"postgres"`
	// MySQL feeds the index from a MySQL or MariaDB binary log (index/mysqlsource).
	MySQL MySQLConfig `koanf:"mysql"`
	// Kafka feeds the index from Kafka topics: Canal flat messages, Debezium envelopes
	// (index/kafkasource).
	Kafka KafkaConfig `koanf:"kafka"`
	// Debezium says how the Debezium connector feeding the index writes values without a
	// schema, whichever source delivers its events (HTTP, Redis Streams, Kafka, replay).
	Debezium DebeziumSettings `koanf:"debezium"`
}

// MySQL flavors of MySQLConfig.Flavor.
const (
	FlavorAuto    = "auto"
	FlavorMySQL   = "mysql"
	FlavorMariaDB = "mariadb"
)

// MySQLConfig configures the MySQL/MariaDB binlog source of the index (package
// index/mysqlsource). It needs Redis (the position is kept there).
type MySQLConfig struct {
	// URL is the server, mysql://user:password@host:3306/ (none: the source is off). Its user
	// needs REPLICATION SLAVE, REPLICATION CLIENT (BINLOG MONITOR on MariaDB) and SELECT on the
	// tables; the server binlog_format=ROW and binlog_row_image=FULL.
	URL string `koanf:"url"`
	// ServerID is this replica's server id, unique among the server's replicas (0: a random
	// one in [2^30, 2^32) at each start).
	ServerID uint32 `koanf:"server-id"`
	// Tables are the followed tables, "db.table", each declared in index.tables with that db
	// and table.
	Tables []string `koanf:"tables"`
	// Flavor is mysql, mariadb or auto (default: from SELECT VERSION()).
	Flavor string `koanf:"flavor"`
	// LeaseTTL is the binlog lease's TTL (default DefaultLeaseTTL, at least MinLeaseTTL): one
	// serve instance reads the binlog, another takes over within about LeaseTTL of its death.
	LeaseTTL time.Duration `koanf:"lease-ttl"`
}

// PostgresConfig configures the PostgreSQL source of the index (package index/pgsource). It
// needs Redis (positions are kept there).
type PostgresConfig struct {
	// URL is the source database, postgres://… (none: the source is off). Its user needs the
	// REPLICATION attribute; the server wal_level=logical (and the wal2json plugin when Plugin
	// is wal2json).
	URL string `koanf:"url"`
	// Slot is the replication slot (default DefaultSlot).
	Slot string `koanf:"slot"`
	// Plugin is the slot's logical decoding plugin: PluginPgoutput (default) or PluginWal2JSON.
	Plugin string `koanf:"plugin"`
	// Publication is the pgoutput publication to stream (default: one named after the slot,
	// created and kept up to date by redstate for Tables). A named one must exist and publish
	// inserts, updates and deletes of every table in Tables.
	Publication string `koanf:"publication"`
	// Database is the index "db" of the changes (default: the database's own name).
	Database string `koanf:"database"`
	// Tables are the followed tables ("schema.table", or "table" in public), each the index
	// table of the same name under Database.
	Tables []string `koanf:"tables"`
}

// StreamsConfig configures the Redis Streams source of the index (package
// index/streamsource). It needs Redis.
type StreamsConfig struct {
	// Keys are the stream keys, one per table (none: the source is off).
	Keys []string `koanf:"keys"`
	// Group is the consumer group (default DefaultStreamGroup).
	Group string `koanf:"group"`
	// Consumer names this instance in the group (default "<hostname>-<pid>").
	Consumer string `koanf:"consumer"`
	// Format is the entries' event format: debezium (default), canal or native.
	Format string `koanf:"format"`
	// ClaimIdle is how long an entry stays pending at a dead consumer before it is claimed
	// (default DefaultClaimIdle).
	ClaimIdle time.Duration `koanf:"claim-idle"`
	// NullValue is the value the sink writes for a tombstone, its
	// debezium.sink.redis.null.value (default DefaultStreamNullValue): such entries are
	// acknowledged and counted, not applied.
	NullValue string `koanf:"null-value"`
}

// DefaultConfig returns the index's defaults: the seed's prefix and version TTL, no tables,
// both sources off.
func DefaultConfig() Config {
	return Config{
		KeyPrefix:     DefaultPrefix,
		VersionTTL:    DefaultVersionTTL,
		DeadLetterMax: DefaultDeadLetterMax,
		Tables:        []TableSpec{},
		Streams:       StreamsConfig{Keys: []string{}, Group: DefaultStreamGroup, Format: FormatDebezium, ClaimIdle: DefaultClaimIdle, NullValue: DefaultStreamNullValue},
		Postgres:      PostgresConfig{Slot: DefaultSlot, Plugin: PluginPgoutput, Tables: []string{}},
		MySQL:         MySQLConfig{Tables: []string{}, Flavor: FlavorAuto, LeaseTTL: DefaultLeaseTTL},
		Kafka:         DefaultKafkaConfig(),
		Debezium:      DefaultDebeziumSettings(),
	}
}

// Validate reports every problem of c at once, each naming its configuration key (index.*).
// Whether the sources have the Redis they need is the caller's check.
func (c Config) Validate() error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if err := ValidatePrefix(c.KeyPrefix); err != nil {
		add("index.key-prefix", "%s", redstate.ErrorMessage(err))
	}
	if c.VersionTTL < MinVersionTTL {
		add("index.version-ttl", "must be at least %s, got %s", MinVersionTTL, c.VersionTTL)
	}
	if c.DeadLetterMax < 1 {
		add("index.dead-letter-max", "must be at least 1, got %d", c.DeadLetterMax)
	}
	switch c.Streams.Format {
	case FormatDebezium, FormatCanal, FormatNative:
	default:
		add("index.streams.format", "must be debezium, canal or native, got %q", c.Streams.Format)
	}
	if c.Streams.ClaimIdle <= 0 {
		add("index.streams.claim-idle", "must be positive, got %s", c.Streams.ClaimIdle)
	}
	if c.Streams.NullValue == "" {
		add("index.streams.null-value", "must not be empty (the sink's null.value, %q by default)", DefaultStreamNullValue)
	}
	if len(c.Streams.Keys) > 0 && len(c.Tables) == 0 {
		add("index.streams.keys", "are set but no index.tables are declared")
	}
	seen := map[string]int{}
	for i, t := range c.Tables {
		key := fmt.Sprintf("index.tables[%d]", i)
		if err := t.Validate(); err != nil {
			add(key, "%s", redstate.ErrorMessage(err))
		}
		name := t.DB + "." + t.Table
		if j, dup := seen[name]; dup {
			add(key, "table %s is also declared by index.tables[%d]", name, j)
		}
		seen[name] = i
	}
	if pg := c.Postgres; pg.URL != "" {
		if !strings.HasPrefix(pg.URL, "postgres://") && !strings.HasPrefix(pg.URL, "postgresql://") {
			add("index.postgres.url", "must be a postgres:// URL, got %q", redact.URL(pg.URL))
		}
		if len(pg.Tables) == 0 {
			add("index.postgres.tables", "must name at least one table")
		}
		if pg.Slot == "" || strings.Trim(pg.Slot, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" || len(pg.Slot) > 63 {
			add("index.postgres.slot", "must be 1..63 characters from [a-z0-9_], got %q", pg.Slot)
		}
		switch pg.Plugin {
		case PluginPgoutput:
		case PluginWal2JSON:
			if pg.Publication != "" {
				add("index.postgres.publication", "is for plugin pgoutput; wal2json has no publication")
			}
		default:
			add("index.postgres.plugin", "must be pgoutput or wal2json, got %q", pg.Plugin)
		}
		if p := pg.Publication; strings.Trim(p, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" || len(p) > 63 {
			add("index.postgres.publication", "must be 1..63 characters from [a-z0-9_], got %q", p)
		}
	}
	if my := c.MySQL; my.URL != "" {
		if !strings.HasPrefix(my.URL, "mysql://") && !strings.HasPrefix(my.URL, "mariadb://") {
			add("index.mysql.url", "must be a mysql:// URL, got %q", redact.URL(my.URL))
		}
		if len(my.Tables) == 0 {
			add("index.mysql.tables", "must name at least one table")
		}
		for i, t := range my.Tables {
			if _, ok := seen[t]; !ok {
				add(fmt.Sprintf("index.mysql.tables[%d]", i), "%q is not a db.table declared in index.tables", t)
			}
		}
		switch my.Flavor {
		case FlavorAuto, FlavorMySQL, FlavorMariaDB:
		default:
			add("index.mysql.flavor", "must be auto, mysql or mariadb, got %q", my.Flavor)
		}
		if my.LeaseTTL < MinLeaseTTL {
			add("index.mysql.lease-ttl", "must be at least %s, got %s", MinLeaseTTL, my.LeaseTTL)
		}
	}
	c.Kafka.validate(len(c.Tables) > 0, add)
	if err := c.Debezium.Validate(); err != nil {
		add("index.debezium", "%s", redstate.ErrorMessage(err))
	}
	return errors.Join(errs...)
}
