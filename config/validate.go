package config

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/executor"
	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/queue"
)

// Roles a token can grant.
const (
	RoleRead  = "read"
	RoleWrite = "write"
	RoleAdmin = "admin"
)

// maxJSONDepth is the largest server.max-json-depth: encoding/json refuses deeper documents
// itself, after its own (linear) scan.
const maxJSONDepth = 10000

// Log levels and formats.
var (
	logLevels  = []string{"debug", "info", "warn", "error"}
	logFormats = []string{"json", "text"}
)

// ValidationError lists every problem Validate found, one per line.
type ValidationError struct {
	// Problems are "key: what is wrong and how to fix it" messages, in key order.
	Problems []string
}

// Error implements error.
func (e *ValidationError) Error() string {
	if len(e.Problems) == 1 {
		return "invalid configuration: " + e.Problems[0]
	}
	return "invalid configuration:\n  - " + strings.Join(e.Problems, "\n  - ")
}

// Validate checks c and returns a *ValidationError listing every problem, or nil.
func (c Config) Validate() error {
	v := &validator{}
	v.namespace("namespace", c.Namespace)
	c.Server.validate(v)
	c.Auth.validate(v)
	c.Redis.validate(v)
	c.Log.validate(v)
	c.Publish.BuildStatus.validate(v)
	c.Queue.validate(v)
	c.Report.validate(v)
	if c.Report.Queue != "" {
		if _, on := c.ReportQueue(); !on {
			v.addf("report.queue", "%q is not one of queue.queues; add it there (handler: external when a consumer outside redstate takes its jobs)", c.Report.Queue)
		}
	}
	c.Executor.validate(v, c.Redis.Configured())
	c.checkQueueKeyspace(v)
	c.Index.validate(v)
	if c.Feed.HybridThreshold < 1 {
		v.addf("feed.hybrid-threshold", "must be at least 1, got %d", c.Feed.HybridThreshold)
	}
	if c.Feed.FanOutConcurrency < 1 {
		v.addf("feed.fanout-concurrency", "must be at least 1, got %d", c.Feed.FanOutConcurrency)
	}
	if c.Feed.Enabled {
		if err := queue.ValidateQueueName(c.Feed.FanOutQueue); err != nil {
			v.addf("feed.fanout-queue", "%s", redstate.ErrorMessage(err))
		}
		for i, q := range c.Queue.Queues {
			if queue.NamesCollide(q.Name, c.Feed.FanOutQueue) {
				v.addf("feed.fanout-queue", "%q overlaps the keys of queue.queues[%d] (%q); choose another name", c.Feed.FanOutQueue, i, q.Name)
			}
		}
	}
	if c.Feed.Prefix != "" {
		v.namespace("feed.prefix", c.Feed.Prefix)
	}
	if c.Feed.RepairInterval <= 0 {
		v.addf("feed.repair-interval", "must be positive, got %s", c.Feed.RepairInterval)
	}
	if b := c.Feed.Breaker; b.FailureRateThreshold < 1 || b.FailureRateThreshold > 100 {
		v.addf("feed.breaker.failure-rate-threshold", "must be a percentage between 1 and 100, got %d", b.FailureRateThreshold)
	}
	if c.Feed.Breaker.WaitDurationInOpenState <= 0 {
		v.addf("feed.breaker.wait-duration-in-open-state", "must be positive, got %s", c.Feed.Breaker.WaitDurationInOpenState)
	}
	if c.Feed.Breaker.SlidingWindowSize < 1 {
		v.addf("feed.breaker.sliding-window-size", "must be at least 1, got %d", c.Feed.Breaker.SlidingWindowSize)
	}
	if pg := c.Index.Postgres; pg.URL != "" {
		v.urlNotRedacted("index.postgres.url", pg.URL)
		if !strings.HasPrefix(pg.URL, "postgres://") && !strings.HasPrefix(pg.URL, "postgresql://") {
			v.addf("index.postgres.url", "must be a postgres:// URL, got %q", RedactURL(pg.URL))
		}
		if !c.Redis.Configured() {
			v.addf("index.postgres.url", "needs Redis (the source keeps its position there)")
		}
		if len(pg.Tables) == 0 {
			v.addf("index.postgres.tables", "must name at least one table")
		}
		if pg.Slot == "" || strings.Trim(pg.Slot, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" || len(pg.Slot) > 63 {
			v.addf("index.postgres.slot", "must be 1..63 characters from [a-z0-9_], got %q", pg.Slot)
		}
	}
	if len(c.Index.Streams.Keys) > 0 && !c.Redis.Configured() {
		v.addf("index.streams.keys", "need Redis (set redis.url, redis.cluster-addrs or redis.sentinel)")
	}
	if c.Queue.RecordStore == RecordStoreRedis && !c.Redis.Configured() {
		v.addf("queue.record-store", "is redis but no Redis is configured (set redis.url, redis.cluster-addrs or redis.sentinel, or use sql)")
	}
	if c.DataDir == "" && c.Database.URL == "" {
		v.addf("data-dir", "must not be empty (it holds the embedded SQLite database)")
	}
	if u := c.Database.URL; u != "" && !strings.HasPrefix(u, "sqlite:") && !strings.HasPrefix(u, "postgres://") && !strings.HasPrefix(u, "postgresql://") {
		v.addf("database.url", "must be sqlite:<path> or postgres://user:password@host:5432/db, got %q", RedactURL(u))
	}
	v.urlNotRedacted("database.url", c.Database.URL)
	if len(v.problems) == 0 {
		return nil
	}
	return &ValidationError{Problems: v.problems}
}

// checkQueueKeyspace refuses queue names whose keys overlap another queue's or another
// block's (the build-status prefix, the executor namespace, the report records' keys): every
// block shares the global namespace, so a queue named "executor:running" would read and
// write the executor's keys.
func (c Config) checkQueueKeyspace(v *validator) {
	reserved := []struct{ prefix, owner string }{
		{c.Publish.BuildStatus.KeyPrefix, "the build-status registry (publish.build-status.key-prefix)"},
		{c.Executor.Persistence.Redis.Namespace + ":", "the executor (executor.persistence.redis.namespace)"},
		{"report:record:", "the report records"},
		{"report:records:", "the report records"},
		{"{", "hash-tagged keys"},
	}
	for i, spec := range c.Queue.Queues {
		key := fmt.Sprintf("queue.queues[%d].name", i)
		for _, r := range reserved {
			if r.prefix != "" && r.prefix != ":" && strings.HasPrefix(spec.Name, r.prefix) {
				v.addf(key, "%q starts with %q, where %s keeps its keys; choose another name", spec.Name, r.prefix, r.owner)
			}
		}
		for j := range i {
			other := c.Queue.Queues[j].Name
			if other != spec.Name && queue.NamesCollide(spec.Name, other) {
				v.addf(key, "%q and queue.queues[%d] %q would share keys (a queue's keys are NAME, NAME:dead, NAME:retry, NAME:consumers and NAME:processing:*); choose names that do not extend each other that way",
					spec.Name, j, other)
			}
		}
	}
}

type validator struct{ problems []string }

func (v *validator) addf(key, format string, args ...any) {
	v.problems = append(v.problems, key+": "+fmt.Sprintf(format, args...))
}

// namespace checks a key prefix: it goes into every key and SCAN pattern, so it must not hold
// whitespace, glob characters or hash-tag braces.
func (v *validator) namespace(key, s string) {
	if i := strings.IndexFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || strings.ContainsRune(`*?[]\{}`, r)
	}); i >= 0 {
		v.addf(key, "%q contains %q; whitespace, control characters, glob characters (* ? [ ] \\) and braces ({ }) are not allowed", s, s[i:i+1])
	}
}

func (v *validator) hostPort(key, addr string) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		v.addf(key, "%q is not host:port (%v)", addr, errors.Unwrap(err))
		return
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		v.addf(key, "%q has an invalid port %q", addr, port)
	}
}

func (s Server) validate(v *validator) {
	if s.Addr == "" {
		v.addf("server.addr", "must not be empty (e.g. 127.0.0.1:8080)")
	} else {
		v.hostPort("server.addr", s.Addr)
	}
	if s.MaxBodyBytes <= 0 {
		v.addf("server.max-body-bytes", "must be positive, got %d", s.MaxBodyBytes)
	}
	if s.MaxJSONDepth < 1 || s.MaxJSONDepth > maxJSONDepth {
		v.addf("server.max-json-depth", "must be 1..%d, got %d", maxJSONDepth, s.MaxJSONDepth)
	}
	if s.ShutdownTimeout <= 0 {
		v.addf("server.shutdown-timeout", "must be positive, got %s", s.ShutdownTimeout)
	}
	for key, d := range map[string]time.Duration{"server.read-timeout": s.ReadTimeout,
		"server.write-timeout": s.WriteTimeout, "server.idle-timeout": s.IdleTimeout} {
		if d <= 0 {
			v.addf(key, "must be positive, got %s", d)
		}
	}
	if s.MaxConnections <= 0 {
		v.addf("server.max-connections", "must be positive, got %d", s.MaxConnections)
	}
	if s.MaxResponseBytes < 1<<20 {
		v.addf("server.max-response-bytes", "must be at least 1 MiB (1048576, one whole document), got %d", s.MaxResponseBytes)
	}
	if s.MaxHeavyReads <= 0 {
		v.addf("server.max-heavy-reads", "must be positive, got %d", s.MaxHeavyReads)
	}
	for key, d := range map[string]time.Duration{"server.heavy-read-wait": s.HeavyReadWait,
		"server.chunk-write-timeout": s.ChunkWriteTimeout} {
		if d <= 0 {
			v.addf(key, "must be positive, got %s", d)
		}
	}
	if s.MaxEventStreams <= 0 {
		v.addf("server.max-event-streams", "must be positive, got %d", s.MaxEventStreams)
	}
	if s.MaxEventStreamsPerClient <= 0 {
		v.addf("server.max-event-streams-per-client", "must be positive, got %d", s.MaxEventStreamsPerClient)
	}
	for i, h := range s.AllowedHosts {
		if h == "" || strings.ContainsAny(h, ":/ ") && net.ParseIP(strings.Trim(h, "[]")) == nil {
			v.addf(fmt.Sprintf("server.allowed-hosts[%d]", i), "%q must be a bare host name or IP address (no port, scheme or path)", h)
		}
	}
	for i, o := range s.CORS.AllowedOrigins {
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
			v.addf(fmt.Sprintf("server.cors.allowed-origins[%d]", i), "%q must be scheme://host[:port], e.g. https://ops.example.com", o)
		}
	}
}

func (a Auth) validate(v *validator) {
	for i, t := range a.Tokens {
		v.notRedacted(fmt.Sprintf("auth.tokens[%d].token", i), t.Token)
	}
	if a.FailedAttemptsPerMinute <= 0 {
		v.addf("auth.failed-attempts-per-minute", "must be positive, got %d", a.FailedAttemptsPerMinute)
	}
	names := map[string]int{}
	secrets := map[string]int{}
	for i, t := range a.Tokens {
		key := fmt.Sprintf("auth.tokens[%d]", i)
		if strings.TrimSpace(t.Name) == "" {
			v.addf(key+".name", "must not be empty")
		} else if j, dup := names[t.Name]; dup {
			v.addf(key+".name", "%q is also the name of auth.tokens[%d]; names must be unique", t.Name, j)
		} else {
			names[t.Name] = i
		}
		if strings.TrimSpace(t.Token) == "" {
			v.addf(key+".token", "must not be empty")
		} else if j, dup := secrets[t.Token]; dup {
			v.addf(key+".token", "is the same secret as auth.tokens[%d]; tokens must be unique", j)
		} else {
			secrets[t.Token] = i
		}
		if len(t.Roles) == 0 {
			v.addf(key+".roles", "must list at least one of read, write, admin")
		}
		for _, r := range t.Roles {
			if r != RoleRead && r != RoleWrite && r != RoleAdmin {
				v.addf(key+".roles", "unknown role %q; roles are read, write and admin", r)
			}
		}
	}
}

// Configured reports whether any Redis topology is configured; without one every block uses
// its embedded memory backend.
func (r Redis) Configured() bool { return len(r.Topologies()) > 0 }

// Topologies returns the configuration keys of every Redis topology that is set ("redis.url",
// "redis.cluster-addrs", "redis.sentinel"); at most one is valid, none means memory backends.
func (r Redis) Topologies() []string {
	var set []string
	if r.URL != "" {
		set = append(set, "redis.url")
	}
	if len(r.ClusterAddrs) > 0 {
		set = append(set, "redis.cluster-addrs")
	}
	if r.Sentinel.MasterName != "" || len(r.Sentinel.Addrs) > 0 {
		set = append(set, "redis.sentinel")
	}
	return set
}

// notRedacted reports a secret that is the redaction marker `config print` writes in its place:
// a printed configuration fed back as a file must not make "***" a working token or password.
func (v *validator) notRedacted(key, secret string) {
	if secret == Redaction {
		v.addf(key, "is %q, the marker `config print` shows in place of a secret; put the real secret here (or in its REDSTATE_* variable)", Redaction)
	}
}

// urlNotRedacted applies notRedacted to the password inside a URL.
func (v *validator) urlNotRedacted(key, raw string) {
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok {
			v.notRedacted(key+" (password)", pw)
		}
	}
}

func (r Redis) validate(v *validator) {
	v.notRedacted("redis.password", r.Password)
	v.notRedacted("redis.sentinel.password", r.Sentinel.Password)
	v.urlNotRedacted("redis.url", r.URL)
	set := r.Topologies()
	if len(set) > 1 {
		v.addf("redis", "%s are all set; configure exactly one topology (url, cluster-addrs or sentinel), or none for the memory backend", strings.Join(set, " and "))
	}
	if r.URL != "" {
		u, err := url.Parse(r.URL)
		switch {
		case err != nil:
			v.addf("redis.url", "is not a URL: %v", errors.Unwrap(err))
		case u.Scheme != "redis" && u.Scheme != "rediss":
			v.addf("redis.url", "scheme must be redis or rediss (TLS), got %q (e.g. redis://127.0.0.1:6379/0)", u.Scheme)
		case u.Host == "":
			v.addf("redis.url", "has no host (e.g. redis://127.0.0.1:6379/0)")
		default:
			if db := strings.Trim(u.Path, "/"); db != "" {
				if n, err := strconv.Atoi(db); err != nil || n < 0 {
					v.addf("redis.url", "database %q must be a non-negative number", db)
				}
			}
		}
	}
	for i, a := range r.ClusterAddrs {
		v.hostPort(fmt.Sprintf("redis.cluster-addrs[%d]", i), a)
	}
	if r.Sentinel.MasterName != "" || len(r.Sentinel.Addrs) > 0 {
		if r.Sentinel.MasterName == "" {
			v.addf("redis.sentinel.master-name", "must be set when redis.sentinel.addrs is")
		}
		if len(r.Sentinel.Addrs) == 0 {
			v.addf("redis.sentinel.addrs", "must list at least one sentinel when redis.sentinel.master-name is set")
		}
	}
	for i, a := range r.Sentinel.Addrs {
		v.hostPort(fmt.Sprintf("redis.sentinel.addrs[%d]", i), a)
	}
	if r.Sentinel.Password != "" && r.Sentinel.MasterName == "" {
		v.addf("redis.sentinel.password", "is set but no sentinel is configured")
	}
	for _, t := range []struct {
		key string
		d   time.Duration
	}{{"redis.dial-timeout", r.DialTimeout}, {"redis.read-timeout", r.ReadTimeout}, {"redis.write-timeout", r.WriteTimeout}} {
		if t.d < 0 {
			v.addf(t.key, "must not be negative, got %s", t.d)
		}
	}
	if r.PoolSize < 0 {
		v.addf("redis.pool-size", "must not be negative, got %d (0 means go-redis's default)", r.PoolSize)
	}
	if r.TLSCAFile != "" {
		if st, err := os.Stat(r.TLSCAFile); err != nil || st.IsDir() {
			v.addf("redis.tls-ca-file", "must be a readable PEM file, got %q", r.TLSCAFile)
		}
	}
	if r.MaxRetries < 0 {
		v.addf("redis.max-retries", "must not be negative, got %d (0 means no retries)", r.MaxRetries)
	}
	if r.DialRetries < 1 {
		v.addf("redis.dial-retries", "must be at least 1, got %d", r.DialRetries)
	}
}

func (l Log) validate(v *validator) {
	if !slices.Contains(logLevels, l.Level) {
		v.addf("log.level", "%q is not one of %s", l.Level, strings.Join(logLevels, ", "))
	}
	if !slices.Contains(logFormats, l.Format) {
		v.addf("log.format", "%q is not one of %s", l.Format, strings.Join(logFormats, ", "))
	}
}

func (b BuildStatus) validate(v *validator) {
	const p = "publish.build-status."
	switch {
	case b.TTL < 0:
		v.addf(p+"ttl", "must not be negative, got %s", b.TTL)
	case b.TTL == 0 && b.TTLDays < 1:
		v.addf(p+"ttl-days", "must be at least 1 (or set %sttl), got %d", p, b.TTLDays)
	}
	v.namespace(p+"key-prefix", b.KeyPrefix)
	b.Resilience.validate(v, p+"resilience.")
}

func (r Resilience) validate(v *validator, p string) {
	if r.Policy != PolicyFailFast && r.Policy != PolicyFallback {
		v.addf(p+"policy", "%q is not one of %s, %s", r.Policy, PolicyFailFast, PolicyFallback)
	}
	if r.Fallback != "memory" {
		v.addf(p+"fallback", "%q is not supported; the only fallback store is memory", r.Fallback)
	}
	if r.FailureRateThreshold < 1 || r.FailureRateThreshold > 100 {
		v.addf(p+"failure-rate-threshold", "must be a percentage between 1 and 100, got %d", r.FailureRateThreshold)
	}
	if r.SlidingWindowSize < 1 {
		v.addf(p+"sliding-window-size", "must be at least 1, got %d", r.SlidingWindowSize)
	}
	if r.WaitDurationInOpenState <= 0 {
		v.addf(p+"wait-duration-in-open-state", "must be positive, got %s", r.WaitDurationInOpenState)
	}
	if r.WriteBackInterval <= 0 {
		v.addf(p+"write-back-interval", "must be positive, got %s", r.WriteBackInterval)
	}
	if r.Journal != "" {
		v.journalPath(p+"journal", r.Journal)
	}
}

// journalPath checks a file path the server will create: it must name a file (not a
// directory), and its directory must exist or be creatable (its nearest existing ancestor is a
// directory). Whether the process may write there is only known when it opens the file.
func (v *validator) journalPath(key, path string) {
	if strings.HasSuffix(path, "/") || strings.HasSuffix(path, string(filepath.Separator)) {
		v.addf(key, "%q ends with a separator; name a file, e.g. %q", path, filepath.Join(path, "fallback.journal"))
		return
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		v.addf(key, "%q is a directory; name a file inside it, e.g. %q", path, filepath.Join(path, "fallback.journal"))
		return
	}
	dir := filepath.Dir(path)
	for d := dir; ; {
		fi, err := os.Stat(d)
		switch {
		case err == nil && !fi.IsDir():
			v.addf(key, "directory %q cannot be created: %q is not a directory", dir, d)
			return
		case err == nil:
			return // d exists: dir exists or can be created below it
		case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR): // ENOTDIR: an ancestor is a file
			v.addf(key, "directory %q cannot be checked: %v", dir, err)
			return
		}
		parent := filepath.Dir(d)
		if parent == d {
			v.addf(key, "directory %q cannot be created: no part of it exists", dir)
			return
		}
		d = parent
	}
}

func (q Queue) validate(v *validator) {
	if q.RecordRetention < 0 {
		v.addf("queue.record-retention", "must not be negative, got %s (0 means the store's default)", q.RecordRetention)
	}
	switch q.RecordStore {
	case RecordStoreSQL, RecordStoreRedis, RecordStoreMemory:
	default:
		v.addf("queue.record-store", "must be sql, redis or memory, got %q", q.RecordStore)
	}
	names := map[string]int{}
	for i, spec := range q.Queues {
		p := fmt.Sprintf("queue.queues[%d].", i)
		if err := queue.ValidateQueueName(spec.Name); err != nil {
			v.addf(p+"name", "%s", redstate.ErrorMessage(err))
		} else if j, dup := names[spec.Name]; dup {
			v.addf(p+"name", "%q is also the name of queue.queues[%d]; names must be unique", spec.Name, j)
		} else {
			names[spec.Name] = i
		}
		if spec.Concurrency < 0 {
			v.addf(p+"concurrency", "must be at least 1, got %d", spec.Concurrency)
		}
		for _, d := range []struct {
			key string
			d   time.Duration
		}{{"block-timeout", spec.BlockTimeout}, {"error-delay", spec.ErrorDelay}, {"lease", spec.Lease}, {"webhook.timeout", spec.Webhook.Timeout}} {
			if d.d < 0 {
				v.addf(p+d.key, "must be positive, got %s", d.d)
			}
		}
		for j, d := range spec.RetryDelays {
			if d <= 0 {
				v.addf(fmt.Sprintf("%sretry-delays[%d]", p, j), "must be positive, got %s", d)
			}
		}
		if spec.Prefetch != nil && *spec.Prefetch < 0 {
			v.addf(p+"prefetch", "must not be negative, got %d (0 means no prefetch)", *spec.Prefetch)
		}
		if spec.MaxRetries != nil && *spec.MaxRetries < 0 {
			v.addf(p+"max-retries", "must not be negative, got %d (0 means no retries)", *spec.MaxRetries)
		}
		if eff := spec.Effective(); eff.Retries() > 0 && len(eff.RetryDelays) == 0 {
			v.addf(p+"retry-delays", "must not be empty when max-retries is %d (set max-retries: 0 for no retries)", eff.Retries())
		}
		v.urlNotRedacted(p+"webhook.url", spec.Webhook.URL)
		v.notRedacted(p+"webhook.secret", spec.Webhook.Secret)
		switch spec.Handler {
		case "", HandlerReport, HandlerExternal:
			if spec.Webhook.URL != "" {
				v.addf(p+"webhook.url", "is set but handler is %q; set handler: webhook", spec.Effective().Handler)
			}
		case HandlerWebhook:
			u, err := url.Parse(spec.Webhook.URL)
			switch {
			case spec.Webhook.URL == "":
				v.addf(p+"webhook.url", "is required for handler webhook (e.g. http://127.0.0.1:9000/jobs)")
			case err != nil:
				v.addf(p+"webhook.url", "is not a URL: %v", errors.Unwrap(err))
			case u.Scheme != "http" && u.Scheme != "https", u.Host == "":
				v.addf(p+"webhook.url", "must be an http or https URL with a host, got %q", RedactURL(spec.Webhook.URL))
			}
		default:
			v.addf(p+"handler", "%q is not one of %s, %s, %s", spec.Handler, HandlerReport, HandlerWebhook, HandlerExternal)
		}
	}
	r := q.Reconciler
	if r.Age <= 0 {
		v.addf("queue.reconciler.age", "must be positive, got %s", r.Age)
	}
	if r.Interval <= 0 {
		v.addf("queue.reconciler.interval", "must be positive, got %s", r.Interval)
	}
}

func (r Report) validate(v *validator) {
	if r.Delay < 0 {
		v.addf("report.delay", "must not be negative, got %s (0 means no artificial delay)", r.Delay)
	}
}

func (e Executor) validate(v *validator, redisConfigured bool) {
	p := e.Persistence
	switch p.StoreType {
	case "", ExecutorStoreMemory:
	case ExecutorStoreRedis:
		if !redisConfigured {
			v.addf("executor.persistence.store-type", "is redis but no Redis is configured (set redis.url, redis.cluster-addrs or redis.sentinel, or use memory)")
		}
	default:
		v.addf("executor.persistence.store-type", "must be redis or memory, got %q", p.StoreType)
	}
	if p.OnRedisUnavailable != ExecutorDegrade && p.OnRedisUnavailable != ExecutorFail {
		v.addf("executor.persistence.on-redis-unavailable", "must be memory (degrade) or fail, got %q", p.OnRedisUnavailable)
	}
	if p.Redis.Namespace != "" {
		if err := executor.ValidateID("namespace", p.Redis.Namespace); err != nil {
			v.addf("executor.persistence.redis.namespace", "%s", redstate.ErrorMessage(err))
		}
	}
	for _, t := range []struct {
		key string
		d   time.Duration
	}{
		{"executor.persistence.redis.ttl.checkpoint", p.Redis.TTL.Checkpoint},
		{"executor.persistence.redis.ttl.projection", p.Redis.TTL.Projection},
		{"executor.persistence.redis.ttl.lock", p.Redis.TTL.Lock},
	} {
		if t.d != 0 && t.d < time.Second {
			v.addf(t.key, "must be at least 1s (or 0 for the default), got %s", t.d)
		}
	}
	for _, t := range []struct {
		key string
		d   time.Duration
	}{
		{"executor.heartbeat-interval", e.HeartbeatInterval},
		{"executor.orphan-scan-interval", e.OrphanScanInterval},
		{"executor.liveness-ttl", e.LivenessTTL},
		{"executor.liveness-interval", e.LivenessInterval},
		{"executor.metrics-interval", e.MetricsInterval},
	} {
		if t.d <= 0 {
			v.addf(t.key, "must be positive, got %s", t.d)
		}
	}
	if e.LivenessInterval > 0 && e.LivenessTTL > 0 && e.LivenessInterval > e.LivenessTTL/2 {
		v.addf("executor.liveness-interval", "%s must be at most half of executor.liveness-ttl (%s), so one lost renewal does not make a live instance look dead",
			e.LivenessInterval, e.LivenessTTL)
	}
	names := map[string]int{}
	for i, h := range e.Handlers {
		key := fmt.Sprintf("executor.handlers[%d]", i)
		v.notRedacted(key+".secret", h.Secret)
		v.urlNotRedacted(key+".url", h.URL)
		if h.Name == "" {
			v.addf(key+".name", "must not be empty")
		} else if j, dup := names[h.Name]; dup {
			v.addf(key+".name", "%q is also the name of executor.handlers[%d]", h.Name, j)
		} else {
			names[h.Name] = i
		}
		u, err := url.Parse(h.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			v.addf(key+".url", "must be an http(s) URL, got %q", h.URL)
		}
		if h.Timeout < 0 {
			v.addf(key+".timeout", "must not be negative, got %s", h.Timeout)
		}
	}
}

func (x Index) validate(v *validator) {
	if err := index.ValidatePrefix(x.Prefix); err != nil {
		v.addf("index.prefix", "%s", redstate.ErrorMessage(err))
	}
	if x.VersionTTL < time.Second {
		v.addf("index.version-ttl", "must be at least 1s, got %s", x.VersionTTL)
	}
	if x.DeadLetterMax < 1 {
		v.addf("index.dead-letter-max", "must be at least 1, got %d", x.DeadLetterMax)
	}
	switch x.Streams.Format {
	case index.FormatDebezium, index.FormatCanal, index.FormatNative:
	default:
		v.addf("index.streams.format", "must be debezium, canal or native, got %q", x.Streams.Format)
	}
	if x.Streams.ClaimIdle <= 0 {
		v.addf("index.streams.claim-idle", "must be positive, got %s", x.Streams.ClaimIdle)
	}
	if len(x.Streams.Keys) > 0 && len(x.Tables) == 0 {
		v.addf("index.streams.keys", "are set but no index.tables are declared")
	}
	seen := map[string]int{}
	for i, t := range x.Tables {
		key := fmt.Sprintf("index.tables[%d]", i)
		if err := t.Validate(); err != nil {
			v.addf(key, "%s", redstate.ErrorMessage(err))
		}
		name := t.DB + "." + t.Table
		if j, dup := seen[name]; dup {
			v.addf(key, "table %s is also declared by index.tables[%d]", name, j)
		}
		seen[name] = i
	}
}
