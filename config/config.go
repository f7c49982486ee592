// Package config loads redstate's configuration: a YAML file (--config), then REDSTATE_*
// environment variables, then command-line flags, each overriding the one before (Load,
// BindFlags), into one Config whose sections are the blocks' own option types (redis:
// redisconn.Options, publish.build-status: buildstatus.Config, executor: executor.Config,
// index: index.Config, feed: feed.Config, queue: queue.Config, report: report.Config)
// next to the server's own. Config.Validate runs every block's Validate
// and adds the checks that span blocks; Config.Redacted and Config.YAML print it. Keys are
// kebab-case and mirror the seeds where they give one (publish.build-status.ttl-days).
// docs/configuration.md lists every key.
package config

import (
	"strings"
	"time"

	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/executor"
	"github.com/redstate/redstate/feed"
	"github.com/redstate/redstate/history"
	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/redisconn"
	"github.com/redstate/redstate/report"
)

// Config is the whole configuration of the redstate server.
type Config struct {
	// Namespace is prepended to every Redis key of every block, e.g. "prod-" (default "").
	Namespace string `koanf:"namespace"`
	// Server is the HTTP listener.
	Server Server `koanf:"server"`
	// Auth is bearer-token authentication (off without tokens).
	Auth Auth `koanf:"auth"`
	// Redis selects the Redis backend (none: embedded memory backends).
	Redis redisconn.Options `koanf:"redis"`
	// Log configures logging.
	Log Log `koanf:"log"`
	// Publish holds the build-status registry's settings.
	Publish Publish `koanf:"publish"`
	// Queue configures the job queues: queues, workers, records, reconciler.
	Queue queue.Config `koanf:"queue"`
	// Report configures the report flow on top of the queue.
	Report report.Config `koanf:"report"`
	// Executor configures the multi-tenant stage executor.
	Executor executor.Config `koanf:"executor"`
	// Index configures the change-data-capture tag index.
	Index index.Config `koanf:"index"`
	// Feed configures the feed read/unread state block.
	Feed feed.Config `koanf:"feed"`
	// Stats configures the statistics history the dashboard's charts read.
	Stats Stats `koanf:"stats"`
	// DataDir is where embedded state lives on disk: the SQLite database (default
	// "redstate-data", relative to the working directory; created on start).
	DataDir string `koanf:"data-dir"`
	// Database is the SQL database of the blocks whose source of truth is SQL (the report
	// records, the feed).
	Database Database `koanf:"database"`
	// Demo loads the demo layer (demo.yaml: an example index table, a 30 s report generator)
	// under the file, environment and flags, and makes serve register the built-in stage handler
	// "steps", so every example of the README works on a bare `serve --demo` (default false).
	Demo bool `koanf:"demo"`
	// Deprecations are the renamed keys (RenamedKeys) that the loaded file or environment gave
	// by their old names, each already read into its new key. Load fills it; it is not a key.
	// The CLI logs each once at startup.
	Deprecations []Deprecation `koanf:"-"`
}

// Database selects the SQL database (package sqldb).
type Database struct {
	// URL is a sqldb DSN: "sqlite:<path>", "postgres://user:pw@host:5432/db?sslmode=…" or
	// "mysql://user:pw@host:3306/db" (also mariadb://).
	// Default "": SQLite in <data-dir>/redstate.db.
	URL string `koanf:"url"`
}

// DatabaseURL returns the effective SQL DSN: Database.URL, or SQLite in DataDir.
func (c Config) DatabaseURL() string {
	if c.Database.URL != "" {
		return c.Database.URL
	}
	dir := c.DataDir
	if dir == "" {
		dir = DefaultDataDir
	}
	return "sqlite:" + strings.TrimSuffix(dir, "/") + "/redstate.db"
}

// DefaultDataDir is the default data directory, relative to the working directory.
const DefaultDataDir = "redstate-data"

// Server configures the HTTP listener.
type Server struct {
	// Addr is the listen address (default "127.0.0.1:8080").
	Addr string `koanf:"addr"`
	// MaxBodyBytes bounds request bodies (default 1 MiB).
	MaxBodyBytes int64 `koanf:"max-body-bytes"`
	// MaxJSONDepth bounds how deeply a request body's objects and arrays may nest (default 64).
	MaxJSONDepth int `koanf:"max-json-depth"`
	// Insecure allows a non-loopback Addr without auth tokens (default false).
	Insecure bool `koanf:"insecure"`
	// ShutdownTimeout bounds graceful shutdown (default 15s).
	ShutdownTimeout time.Duration `koanf:"shutdown-timeout"`
	// ReadTimeout bounds reading one whole request, headers and body (default 30s), so a body
	// trickled or announced and never sent cannot hold a connection.
	ReadTimeout time.Duration `koanf:"read-timeout"`
	// WriteTimeout bounds writing one response (default 60s); event streams lift it.
	WriteTimeout time.Duration `koanf:"write-timeout"`
	// IdleTimeout closes keep-alive connections idle this long (default 120s).
	IdleTimeout time.Duration `koanf:"idle-timeout"`
	// MaxConnections caps concurrently open client connections (default 20000); further
	// connections wait in the kernel's accept queue.
	MaxConnections int `koanf:"max-connections"`
	// MaxResponseBytes bounds a batch read's response (default 32 MiB); ids past it are
	// answered as "deferred".
	MaxResponseBytes int64 `koanf:"max-response-bytes"`
	// MaxHeavyReads bounds the listings and batch reads that may answer more than 100 builds
	// served at once (default 8); more wait up to HeavyReadWait, then are answered 429.
	MaxHeavyReads int `koanf:"max-heavy-reads"`
	// HeavyReadWait is how long a heavy read waits for a slot (default 5s).
	HeavyReadWait time.Duration `koanf:"heavy-read-wait"`
	// ChunkWriteTimeout bounds writing one chunk of a streamed listing or batch read (default
	// 10s); a client that stops reading is disconnected after it.
	ChunkWriteTimeout time.Duration `koanf:"chunk-write-timeout"`
	// MaxEventStreams bounds the event streams (SSE) open at once (default 10000).
	MaxEventStreams int `koanf:"max-event-streams"`
	// MaxEventStreamsPerClient bounds one token's (without auth: one address's) open event
	// streams (default 1000).
	MaxEventStreamsPerClient int `koanf:"max-event-streams-per-client"`
	// DashboardPollInterval is how often a dashboard topic without change events of its own is
	// read while a page subscribes to it (default 1s).
	DashboardPollInterval time.Duration `koanf:"dashboard-poll-interval"`
	// DashboardUpdatesPerSecond bounds the changes one dashboard topic announces per second
	// (default 2); changes in between coalesce.
	DashboardUpdatesPerSecond int `koanf:"dashboard-updates-per-second"`
	// DashboardMaxTopics bounds the topics of one dashboard stream (default 32).
	DashboardMaxTopics int `koanf:"dashboard-max-topics"`
	// AllowedHosts are extra host names accepted in the Host header of a loopback listener
	// (localhost, 127.0.0.1, ::1 and the listen host always are); other names are refused to
	// stop DNS rebinding. Not applied to non-loopback listeners.
	AllowedHosts []string `koanf:"allowed-hosts"`
	// CORS configures cross-origin access from browsers.
	CORS CORS `koanf:"cors"`
}

// CORS configures which browser origins may call the API cross-origin.
type CORS struct {
	// AllowedOrigins are exact origins ("https://ops.example.com") allowed to call the API,
	// state-changing requests included (default none: cross-origin writes are refused).
	AllowedOrigins []string `koanf:"allowed-origins"`
}

// Auth configures bearer-token authentication. With no tokens, auth is off (loopback only).
type Auth struct {
	// Tokens are the accepted tokens (default none). From the environment:
	// REDSTATE_AUTH_TOKENS="name:token:role+role,name2:token2:role" (see ParseTokens).
	Tokens []Token `koanf:"tokens"`
	// FailedAttemptsPerMinute bounds failed authentication attempts per client address
	// (default 30); past it the client is answered 429 until its budget refills.
	FailedAttemptsPerMinute int `koanf:"failed-attempts-per-minute"`
}

// MinTokenLength is the shortest token accepted on a non-loopback listener (16 characters: at
// least 64 bits from a random hex or base64 generator). Shorter tokens are refused at startup
// there and logged as a warning on loopback.
const MinTokenLength = 16

// Token is one bearer token and the roles it grants.
type Token struct {
	// Name identifies the token in logs (never the token itself).
	Name string `koanf:"name"`
	// Token is the secret presented as "Authorization: Bearer <token>".
	Token string `koanf:"token"`
	// Roles are any of "read", "write", "admin" (admin implies write, write implies read).
	Roles []string `koanf:"roles"`
}

// Log configures structured logging (log/slog).
type Log struct {
	// Level is debug, info, warn or error (default info).
	Level string `koanf:"level"`
	// Format is json or text (default json).
	Format string `koanf:"format"`
}

// Publish holds the seed-000 block's settings under the seed's own key names.
type Publish struct {
	// BuildStatus is the build-status registry (publish.build-status.*).
	BuildStatus buildstatus.Config `koanf:"build-status"`
}

// Default returns the configuration with every default filled in.
func Default() Config {
	return Config{
		Server: Server{Addr: "127.0.0.1:8080", MaxBodyBytes: 1 << 20, MaxJSONDepth: 64, ShutdownTimeout: 15 * time.Second,
			ReadTimeout: 30 * time.Second, WriteTimeout: 60 * time.Second, IdleTimeout: 120 * time.Second,
			MaxConnections: 20000, MaxResponseBytes: 32 << 20, MaxHeavyReads: 8, HeavyReadWait: 5 * time.Second, ChunkWriteTimeout: 10 * time.Second, MaxEventStreams: 10000, MaxEventStreamsPerClient: 1000,
			DashboardPollInterval: time.Second, DashboardUpdatesPerSecond: 2, DashboardMaxTopics: 32, AllowedHosts: []string{}, CORS: CORS{AllowedOrigins: []string{}}},
		Auth:     Auth{FailedAttemptsPerMinute: 30},
		Redis:    redisconn.DefaultOptions(),
		Log:      Log{Level: "info", Format: "json"},
		Publish:  Publish{BuildStatus: buildstatus.DefaultConfig()},
		Queue:    report.DefaultQueueConfig(),
		Report:   report.DefaultConfig(),
		DataDir:  DefaultDataDir,
		Feed:     feed.DefaultConfig(),
		Index:    index.DefaultConfig(),
		Executor: executor.DefaultConfig(),
		Stats:    Stats{History: history.DefaultConfig()},
	}
}

// Stats is the stats section.
type Stats struct {
	// History is the statistics history (stats.history).
	History history.Config `koanf:"history"`
}
