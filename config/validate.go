package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/executor"
	"github.com/redstate/redstate/internal/keyspace"
	"github.com/redstate/redstate/internal/redact"
	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/report"
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
	v.notRedacted("redis.password", c.Redis.Password)
	v.notRedacted("redis.sentinel.password", c.Redis.Sentinel.Password)
	v.urlNotRedacted("redis.url", c.Redis.URL)
	v.add(c.Redis.Validate())
	c.Log.validate(v)
	v.add(c.Publish.BuildStatus.Validate())
	v.add(report.ValidateQueueConfig(c.Queue))
	for i, q := range c.Queue.Queues {
		p := fmt.Sprintf("queue.queues[%d].", i)
		v.urlNotRedacted(p+"webhook.url", q.Webhook.URL)
		v.notRedacted(p+"webhook.secret", q.Webhook.Secret)
	}
	v.add(c.Report.Validate())
	v.add(c.Report.ValidateQueueHandlers(c.Queue))
	if c.Report.Queue != "" {
		if _, on := c.Report.QueueIn(c.Queue); !on {
			v.addf("report.queue", "%q is not one of queue.queues; add it there (handler: external when a consumer outside redstate takes its jobs)", c.Report.Queue)
		}
	}
	c.validateExecutor(v)
	c.checkQueueKeyspace(v)
	v.add(c.Index.Validate())
	v.add(c.Feed.Validate())
	v.add(c.Stats.History.Validate())
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
	if pg := c.Index.Postgres; pg.URL != "" {
		v.urlNotRedacted("index.postgres.url", pg.URL)
		if !c.Redis.Configured() {
			v.addf("index.postgres.url", "needs Redis (the source keeps its position there)")
		}
	}
	if my := c.Index.MySQL; my.URL != "" {
		v.urlNotRedacted("index.mysql.url", my.URL)
		if !c.Redis.Configured() {
			v.addf("index.mysql.url", "needs Redis (the source keeps its position there)")
		}
	}
	v.notRedacted("index.kafka.sasl.password", c.Index.Kafka.SASL.Password)
	if len(c.Index.Kafka.Brokers) > 0 && !c.Redis.Configured() {
		v.addf("index.kafka.brokers", "need Redis (the offsets committed to Kafka promise that the index kept what was applied)")
	}
	if len(c.Index.Streams.Keys) > 0 && !c.Redis.Configured() {
		v.addf("index.streams.keys", "need Redis (set redis.url, redis.cluster-addrs or redis.sentinel)")
	}
	if c.Queue.RecordStore == report.RecordStoreRedis && !c.Redis.Configured() {
		v.addf("queue.record-store", "is redis but no Redis is configured (set redis.url, redis.cluster-addrs or redis.sentinel, or use sql)")
	}
	if c.DataDir == "" && c.Database.URL == "" {
		v.addf("data-dir", "must not be empty (it holds the embedded SQLite database)")
	}
	if u := c.Database.URL; u != "" && !validDatabaseURL(u) {
		v.addf("database.url", "must be sqlite:<path>, postgres://user:password@host:5432/db or mysql://user:password@host:3306/db, got %q", redact.URL(u))
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
		{c.Executor.Persistence.Redis.KeyPrefix + ":", "the executor (executor.persistence.redis.key-prefix)"},
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

// namespace checks a key prefix (keyspace.CheckPrefix).
func (v *validator) namespace(key, s string) {
	if err := keyspace.CheckPrefix(s); err != nil {
		v.addf(key, "%s", err)
	}
}

// add records the problems of a block's Validate: each error of a joined error is one problem
// (its message already names the key).
func (v *validator) add(err error) {
	if err == nil {
		return
	}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range joined.Unwrap() {
			v.add(e)
		}
		return
	}
	v.problems = append(v.problems, err.Error())
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
	if s.DashboardPollInterval <= 0 {
		v.addf("server.dashboard-poll-interval", "must be positive, got %s", s.DashboardPollInterval)
	}
	if s.DashboardUpdatesPerSecond <= 0 || s.DashboardUpdatesPerSecond > 1000 {
		v.addf("server.dashboard-updates-per-second", "must be 1..1000, got %d", s.DashboardUpdatesPerSecond)
	}
	if s.DashboardMaxTopics <= 0 {
		v.addf("server.dashboard-max-topics", "must be positive, got %d", s.DashboardMaxTopics)
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

func (l Log) validate(v *validator) {
	if !slices.Contains(logLevels, l.Level) {
		v.addf("log.level", "%q is not one of %s", l.Level, strings.Join(logLevels, ", "))
	}
	if !slices.Contains(logFormats, l.Format) {
		v.addf("log.format", "%q is not one of %s", l.Format, strings.Join(logFormats, ", "))
	}
}

// validateExecutor checks the executor section: its own rules (executor.Config.Validate), the
// secrets of its handlers, and that store-type redis has a Redis to use.
func (c Config) validateExecutor(v *validator) {
	if c.Executor.Persistence.StoreType == executor.StoreRedis && !c.Redis.Configured() {
		v.addf("executor.persistence.store-type", "is redis but no Redis is configured (set redis.url, redis.cluster-addrs or redis.sentinel, or use memory)")
	}
	for i, h := range c.Executor.Handlers {
		key := fmt.Sprintf("executor.handlers[%d]", i)
		v.notRedacted(key+".secret", h.Secret)
		v.urlNotRedacted(key+".url", h.URL)
	}
	v.add(c.Executor.Validate())
}

// validDatabaseURL reports whether u has a scheme package sqldb opens.
func validDatabaseURL(u string) bool {
	for _, prefix := range []string{"sqlite:", "postgres://", "postgresql://", "mysql://", "mariadb://"} {
		if strings.HasPrefix(u, prefix) {
			return true
		}
	}
	return false
}
