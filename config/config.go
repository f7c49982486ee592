// Package config loads redstate's configuration: a YAML file (--config), then REDSTATE_*
// environment variables, then command-line flags, each overriding the one before (Load,
// BindFlags), into one Config whose sections are the blocks' own option types (redis:
// redisconn.Options, publish.build-status: buildstatus.Options, executor: executor.Config,
// index: index.Config) next to the server's own. Config.Validate runs every block's Validate
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
	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/internal/resilience"
	"github.com/redstate/redstate/redisconn"
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
	// Publish holds the build-status registry's settings (seed 000).
	Publish Publish `koanf:"publish"`
	// Queue configures the job queue block (seed 004): queues, workers, records, reconciler.
	Queue Queue `koanf:"queue"`
	// Report configures the seed's report flow on top of the queue (seed 004).
	Report Report `koanf:"report"`
	// Executor configures the multi-tenant stage executor (seed 002).
	Executor executor.Config `koanf:"executor"`
	// Index configures the change-data-capture tag index (seed 001).
	Index index.Config `koanf:"index"`
	// Feed configures the feed read/unread state block (seed 003).
	Feed feed.Config `koanf:"feed"`
	// DataDir is where embedded state lives on disk: the SQLite database (default
	// "redstate-data", relative to the working directory; created on start).
	DataDir string `koanf:"data-dir"`
	// Database is the SQL database of the blocks whose source of truth is SQL (the report
	// records, the feed).
	Database Database `koanf:"database"`
}

// Database selects the SQL database (package sqldb).
type Database struct {
	// URL is a sqldb DSN: "sqlite:<path>" or "postgres://user:pw@host:5432/db?sslmode=…".
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
	BuildStatus buildstatus.Options `koanf:"build-status"`
}

// Resilience is the type of publish.build-status.resilience, owned by package
// internal/resilience.
type Resilience = resilience.Options

// Queue configures the job queue block (seed 004). Its Redis keys are the seed's names
// ("report:queue", "report:queue:dead") after the global namespace.
type Queue struct {
	// RecordStore is where job records (the seed's assessment records) live: "sql" (the
	// default: Database, SQLite in the data directory unless configured, as the seed keeps them
	// in SQL), "redis" (next to the queue; needs Redis) or "memory" (this process only).
	RecordStore string `koanf:"record-store"`
	// RecordRetention is how long a job record is kept after its last write; 0 (the default)
	// means the store's default: 720h in Redis and memory, forever in SQL.
	RecordRetention time.Duration `koanf:"record-retention"`
	// Queues are the queues serve consumes, each with its own worker (default: one queue,
	// report:queue, with the built-in report generator). From the environment:
	// REDSTATE_QUEUE_QUEUES as a YAML/JSON flow list, e.g. '[{name: report:queue, concurrency: 4}]'.
	Queues []QueueSpec `koanf:"queues"`
	// Reconciler re-enqueues records stranded in status 3.
	Reconciler QueueReconciler `koanf:"reconciler"`
}

// QueueSpec configures one queue and its worker. Zero fields take the defaults stated on them
// (the seed's constants), see Effective.
type QueueSpec struct {
	// Name is the queue name, e.g. "report:queue": 1..200 characters from [A-Za-z0-9:_.-].
	Name string `koanf:"name"`
	// Concurrency is the number of consumers (default 1, the seed's serial consumer).
	Concurrency int `koanf:"concurrency"`
	// BlockTimeout is the blocking dequeue timeout (default 30s, the seed's BRPOP timeout).
	BlockTimeout time.Duration `koanf:"block-timeout"`
	// ErrorDelay is the wait after a broker error (default 5s).
	ErrorDelay time.Duration `koanf:"error-delay"`
	// RetryDelays are the waits before retry 1, 2, ... (default [10s, 30s, 60s]).
	RetryDelays []time.Duration `koanf:"retry-delays"`
	// MaxRetries is the number of retries before dead-lettering (default 3; 0 = none).
	MaxRetries *int `koanf:"max-retries"`
	// Lease is the consumer lease; a crashed consumer's jobs are redelivered after it
	// (default 30s).
	Lease time.Duration `koanf:"lease"`
	// Prefetch is how many jobs a worker may hold dequeued beyond the running ones (default:
	// Concurrency; 0 = none). Prefetched jobs are in the worker's in-flight list, so a crash
	// redelivers them after the lease; set 0 for long jobs spread over several processes.
	Prefetch *int `koanf:"prefetch"`
	// Handler is "report" (the built-in report generator, the default), "webhook" (POST each
	// job to Webhook.URL) or "external" (no worker here: a consumer outside redstate, such as
	// the seed's legacy service, takes the jobs).
	Handler string `koanf:"handler"`
	// Webhook is the endpoint of handler "webhook".
	Webhook QueueWebhook `koanf:"webhook"`
}

// QueueWebhook is the HTTP endpoint a webhook queue POSTs each job to.
type QueueWebhook struct {
	// URL is the http(s) endpoint (required for handler "webhook").
	URL string `koanf:"url"`
	// Timeout bounds one call (default 30s).
	Timeout time.Duration `koanf:"timeout"`
	// Secret signs every call (HMAC-SHA256, package webhook); empty: calls are unsigned and a
	// warning is logged at startup.
	Secret string `koanf:"secret"`
}

// QueueReconciler configures the reconciler of stranded records.
type QueueReconciler struct {
	// Enabled turns the reconciler on (default true).
	Enabled bool `koanf:"enabled"`
	// Age is how long a record stays in status 3 before it is checked (default 10m).
	Age time.Duration `koanf:"age"`
	// Interval is how often it runs (default 1m).
	Interval time.Duration `koanf:"interval"`
}

// Report configures the seed's report flow (seed 004).
type Report struct {
	// Queue is the queue of the report flow: the /api/assessment routes submit to it and the
	// reconciler watches it, whatever its handler. It must be one of queue.queues. Default:
	// report:queue when configured, else the first queue with handler report; with neither the
	// report flow is off.
	Queue string `koanf:"queue"`
	// Delay is the built-in generator's artificial work time (default 2s; the seed's real work
	// takes ~30s; 0 = none).
	Delay time.Duration `koanf:"delay"`
}

// Record stores (Queue.RecordStore).
const (
	// RecordStoreSQL keeps records in the SQL database (Config.DatabaseURL).
	RecordStoreSQL = "sql"
	// RecordStoreRedis keeps records in Redis next to the queue.
	RecordStoreRedis = "redis"
	// RecordStoreMemory keeps records in this process.
	RecordStoreMemory = "memory"
)

// Queue handlers.
const (
	// HandlerReport is the built-in report generator.
	HandlerReport = "report"
	// HandlerWebhook POSTs each job to QueueWebhook.URL.
	HandlerWebhook = "webhook"
	// HandlerExternal runs no worker: a consumer outside redstate takes the queue's jobs.
	HandlerExternal = "external"
)

// ReportQueue returns the queue of the report flow (see Report.Queue) and whether the flow
// is on.
func (c Config) ReportQueue() (string, bool) {
	has := func(name string) bool {
		for _, q := range c.Queue.Queues {
			if q.Name == name {
				return true
			}
		}
		return false
	}
	if c.Report.Queue != "" {
		return c.Report.Queue, has(c.Report.Queue)
	}
	if has(DefaultQueueName) {
		return DefaultQueueName, true
	}
	for _, q := range c.Queue.Queues {
		if q.Effective().Handler == HandlerReport {
			return q.Name, true
		}
	}
	return "", false
}

// DefaultQueueName is the seed's queue.
const DefaultQueueName = "report:queue"

// DefaultQueueSpec returns the seed's queue: report:queue, one consumer, BRPOP 30 s, error
// delay 5 s, retries after 10/30/60 s, at most 3, lease 30 s, the built-in report generator.
func DefaultQueueSpec() QueueSpec {
	maxRetries := 3
	return QueueSpec{
		Name:         DefaultQueueName,
		Concurrency:  1,
		BlockTimeout: 30 * time.Second,
		ErrorDelay:   5 * time.Second,
		RetryDelays:  []time.Duration{10 * time.Second, 30 * time.Second, 60 * time.Second},
		MaxRetries:   &maxRetries,
		Lease:        30 * time.Second,
		Handler:      HandlerReport,
		Webhook:      QueueWebhook{Timeout: 30 * time.Second},
	}
}

// Effective returns q with every zero field set to DefaultQueueSpec's value (the name and the
// webhook URL excepted) and an unset Prefetch set to the effective Concurrency.
func (q QueueSpec) Effective() QueueSpec {
	d := DefaultQueueSpec()
	if q.Concurrency == 0 {
		q.Concurrency = d.Concurrency
	}
	if q.BlockTimeout == 0 {
		q.BlockTimeout = d.BlockTimeout
	}
	if q.ErrorDelay == 0 {
		q.ErrorDelay = d.ErrorDelay
	}
	if q.RetryDelays == nil {
		q.RetryDelays = d.RetryDelays
	}
	if q.MaxRetries == nil {
		q.MaxRetries = d.MaxRetries
	}
	if q.Lease == 0 {
		q.Lease = d.Lease
	}
	if q.Handler == "" {
		q.Handler = d.Handler
	}
	if q.Prefetch == nil {
		prefetch := q.Concurrency
		q.Prefetch = &prefetch
	}
	if q.Webhook.Timeout == 0 {
		q.Webhook.Timeout = d.Webhook.Timeout
	}
	return q
}

// Retries returns the effective MaxRetries.
func (q QueueSpec) Retries() int {
	if q.MaxRetries == nil {
		return *DefaultQueueSpec().MaxRetries
	}
	return *q.MaxRetries
}

// Default returns the configuration with every default filled in.
func Default() Config {
	return Config{
		Server: Server{Addr: "127.0.0.1:8080", MaxBodyBytes: 1 << 20, MaxJSONDepth: 64, ShutdownTimeout: 15 * time.Second,
			ReadTimeout: 30 * time.Second, WriteTimeout: 60 * time.Second, IdleTimeout: 120 * time.Second,
			MaxConnections: 20000, MaxResponseBytes: 32 << 20, MaxHeavyReads: 8, HeavyReadWait: 5 * time.Second, ChunkWriteTimeout: 10 * time.Second, MaxEventStreams: 10000, MaxEventStreamsPerClient: 1000, AllowedHosts: []string{}, CORS: CORS{AllowedOrigins: []string{}}},
		Auth:    Auth{FailedAttemptsPerMinute: 30},
		Redis:   redisconn.DefaultOptions(),
		Log:     Log{Level: "info", Format: "json"},
		Publish: Publish{BuildStatus: buildstatus.DefaultOptions()},
		Queue: Queue{
			RecordStore: RecordStoreSQL,
			Queues:      []QueueSpec{DefaultQueueSpec()},
			Reconciler:  QueueReconciler{Enabled: true, Age: 10 * time.Minute, Interval: time.Minute},
		},
		Report:   Report{Delay: 2 * time.Second},
		DataDir:  DefaultDataDir,
		Feed:     feed.DefaultConfig(),
		Index:    index.DefaultConfig(),
		Executor: executor.DefaultConfig(),
	}
}
