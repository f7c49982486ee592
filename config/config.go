// Package config defines redstate's configuration, its defaults, and how it is loaded: a YAML
// file (--config), then REDSTATE_* environment variables, then command-line flags, each
// overriding the one before (Load, BindFlags), and how it is checked (Config.Validate) and
// printed (Config.Redacted, Config.YAML). Keys are kebab-case and mirror the seeds where they
// give one (publish.build-status.ttl-days). docs/configuration.md lists every key.
package config

import "time"

// Config is the whole configuration of the redstate server.
type Config struct {
	// Namespace is prepended to every Redis key of every block, e.g. "prod-" (default "").
	Namespace string `koanf:"namespace"`
	// Server is the HTTP listener.
	Server Server `koanf:"server"`
	// Auth is bearer-token authentication (off without tokens).
	Auth Auth `koanf:"auth"`
	// Redis selects the Redis backend (none: embedded memory backends).
	Redis Redis `koanf:"redis"`
	// Log configures logging.
	Log Log `koanf:"log"`
	// Publish holds the build-status registry's settings (seed 000).
	Publish Publish `koanf:"publish"`
}

// Server configures the HTTP listener.
type Server struct {
	// Addr is the listen address (default "127.0.0.1:8080").
	Addr string `koanf:"addr"`
	// MaxBodyBytes bounds request bodies (default 1 MiB).
	MaxBodyBytes int64 `koanf:"max-body-bytes"`
	// Insecure allows a non-loopback Addr without auth tokens (default false).
	Insecure bool `koanf:"insecure"`
	// ShutdownTimeout bounds graceful shutdown (default 15s).
	ShutdownTimeout time.Duration `koanf:"shutdown-timeout"`
}

// Auth configures bearer-token authentication. With no tokens, auth is off (loopback only).
type Auth struct {
	// Tokens are the accepted tokens (default none). From the environment:
	// REDSTATE_AUTH_TOKENS="name:token:role+role,name2:token2:role" (see ParseTokens).
	Tokens []Token `koanf:"tokens"`
}

// Token is one bearer token and the roles it grants.
type Token struct {
	// Name identifies the token in logs (never the token itself).
	Name string `koanf:"name"`
	// Token is the secret presented as "Authorization: Bearer <token>".
	Token string `koanf:"token"`
	// Roles are any of "read", "write", "admin" (admin implies write, write implies read).
	Roles []string `koanf:"roles"`
}

// Redis selects and tunes the Redis backend. With neither URL nor ClusterAddrs nor
// Sentinel.Addrs set, every block uses its embedded memory backend.
type Redis struct {
	// URL of a standalone server: redis://[user:pass@]host:port[/db] or rediss:// for TLS.
	URL string `koanf:"url"`
	// ClusterAddrs are seed addresses of a Redis Cluster ("host:port").
	ClusterAddrs []string `koanf:"cluster-addrs"`
	// Sentinel selects a Sentinel-managed master.
	Sentinel Sentinel `koanf:"sentinel"`
	// Username is the ACL user (overrides the one in URL when set).
	Username string `koanf:"username"`
	// Password is the ACL password (overrides the one in URL when set).
	Password string `koanf:"password"`
	// TLS enables TLS for cluster and sentinel connections (rediss:// does it for URL).
	TLS bool `koanf:"tls"`
	// TLSCAFile is a PEM file of CA certificates that verify the server's certificate (for
	// rediss:// and redis.tls); empty uses the system roots.
	TLSCAFile string `koanf:"tls-ca-file"`
	// DialTimeout bounds connecting (default 2s).
	DialTimeout time.Duration `koanf:"dial-timeout"`
	// ReadTimeout bounds reading a reply (default 1s).
	ReadTimeout time.Duration `koanf:"read-timeout"`
	// WriteTimeout bounds writing a command (default 1s).
	WriteTimeout time.Duration `koanf:"write-timeout"`
	// PoolSize is connections per node (default 10 per CPU, go-redis's default).
	PoolSize int `koanf:"pool-size"`
	// MaxRetries is how often a failed command is retried on a new connection (default 1;
	// 0 = never). Low values let the circuit breaker see an outage quickly.
	MaxRetries int `koanf:"max-retries"`
	// DialRetries is how many times one connection attempt is made before a command fails
	// (default 1). go-redis's own default of 5 makes every call wait ~0.5 s when Redis is down.
	DialRetries int `koanf:"dial-retries"`
}

// Sentinel configures a Sentinel-managed master.
type Sentinel struct {
	// MasterName is the monitored master's name.
	MasterName string `koanf:"master-name"`
	// Addrs are sentinel addresses ("host:port").
	Addrs []string `koanf:"addrs"`
	// Password authenticates to the sentinels themselves (optional).
	Password string `koanf:"password"`
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
	BuildStatus BuildStatus `koanf:"build-status"`
}

// BuildStatus configures the build-status registry (seed 000).
type BuildStatus struct {
	// TTLDays is the retention after the last write (default 30, the seed's value).
	TTLDays int `koanf:"ttl-days"`
	// TTL, when non-zero, overrides TTLDays with a finer duration (tests, demos).
	TTL time.Duration `koanf:"ttl"`
	// KeyPrefix is the key prefix after the namespace (default "ingenio:publish:").
	KeyPrefix string `koanf:"key-prefix"`
	// Resilience is what happens when Redis fails.
	Resilience Resilience `koanf:"resilience"`
}

// Resilience configures a block's circuit breaker and degraded mode (seed 000 section 9).
type Resilience struct {
	// Policy is "fail-fast" (503 while Redis is unavailable, the default) or "fallback".
	Policy string `koanf:"policy"`
	// Fallback is the degraded store used by the fallback policy; only "memory" exists.
	Fallback string `koanf:"fallback"`
	// FailureRateThreshold is the failure percentage that opens the breaker (default 50).
	FailureRateThreshold int `koanf:"failure-rate-threshold"`
	// WaitDurationInOpenState is how long the breaker stays open (default 10s).
	WaitDurationInOpenState time.Duration `koanf:"wait-duration-in-open-state"`
	// SlidingWindowSize is how many recent calls the failure rate is computed over (default 10).
	SlidingWindowSize int `koanf:"sliding-window-size"`
	// WriteBackInterval is how often pending fallback writes are retried (default 1s).
	WriteBackInterval time.Duration `koanf:"write-back-interval"`
	// Journal is the path of the fallback journal, a write-ahead log on local disk (default ""
	// = off). With it, every write accepted by the fallback policy is appended and fsync'ed
	// before it is acknowledged, and replayed at startup, so it survives a crash or kill of the
	// process while Redis is down. Without it, fallback writes live only in memory until
	// written back. Its directory is created if missing; one process at a time may use a path.
	Journal string `koanf:"journal"`
}

// Resilience policies.
const (
	PolicyFailFast = "fail-fast"
	PolicyFallback = "fallback"
)

// Default returns the configuration with every default filled in.
func Default() Config {
	return Config{
		Server: Server{Addr: "127.0.0.1:8080", MaxBodyBytes: 1 << 20, ShutdownTimeout: 15 * time.Second},
		Redis:  Redis{DialTimeout: 2 * time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: 1, DialRetries: 1},
		Log:    Log{Level: "info", Format: "json"},
		Publish: Publish{BuildStatus: BuildStatus{
			TTLDays:    30,
			KeyPrefix:  "ingenio:publish:",
			Resilience: DefaultResilience(),
		}},
	}
}

// DefaultResilience returns the seed's breaker settings (failure rate 50 %, open 10 s, window 10)
// with the fail-fast policy.
func DefaultResilience() Resilience {
	return Resilience{
		Policy:                  PolicyFailFast,
		Fallback:                "memory",
		FailureRateThreshold:    50,
		WaitDurationInOpenState: 10 * time.Second,
		SlidingWindowSize:       10,
		WriteBackInterval:       time.Second,
	}
}

// BuildStatusTTL returns the effective TTL of build documents.
func (b BuildStatus) BuildStatusTTL() time.Duration {
	if b.TTL > 0 {
		return b.TTL
	}
	return time.Duration(b.TTLDays) * 24 * time.Hour
}
