// Package redisconn turns redstate's Redis configuration into one go-redis client type for all
// three topologies: a standalone server (redis.url), a Redis Cluster (redis.cluster-addrs) and a
// Sentinel-managed master (redis.sentinel). Blocks only ever see redis.UniversalClient, so the
// same code runs on each.
package redisconn

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/redact"
)

// ClientName starts the name every connection registers with CLIENT SETNAME, so redstate's
// connections are recognizable in CLIENT LIST: "redstate-<pid>-<n>", where n counts the clients
// New made in the process (the composition root makes one, so every connection of a serve
// process carries "-1").
const ClientName = "redstate"

// clients counts the clients New made in this process.
var clients atomic.Int64

// clientName is the CLIENT SETNAME of the next client New makes.
func clientName() string {
	return fmt.Sprintf("%s-%d-%d", ClientName, os.Getpid(), clients.Add(1))
}

// ErrNotConfigured is returned by New when c selects no topology (the memory backend).
var ErrNotConfigured = errors.New("redisconn: no Redis configured (set redis.url, redis.cluster-addrs or redis.sentinel)")

// New returns a client for the topology c selects:
//
//   - URL: redis.ParseURL (redis:// or rediss:// for TLS, user:pass@ for ACL, /db);
//     c.Username and c.Password, when set, override the URL's credentials;
//   - ClusterAddrs: a cluster client seeded with those addresses, TLS when c.TLS;
//   - Sentinel: a failover client for Sentinel.MasterName via Sentinel.Addrs, TLS when c.TLS.
//
// Timeouts, PoolSize and retry counts are applied to every topology (zero keeps go-redis's default).
// With c.Durability on, every write is followed by WAIT on its connection (on Cluster, on the
// master that ran it) and the read timeout grows by Durability.WaitTimeout. New does
// not connect: call Ping to check reachability. It returns ErrNotConfigured when no topology
// is set and an error when more than one is.
func New(c Options) (redis.UniversalClient, error) {
	name := clientName()
	switch topology(c) {
	case "":
		return nil, ErrNotConfigured
	case "url":
		opt, err := redis.ParseURL(c.URL)
		if err != nil {
			return nil, fmt.Errorf("redisconn: redis.url %s: %w", redact.URL(c.URL), err)
		}
		if c.Username != "" {
			opt.Username = c.Username
		}
		if c.Password != "" {
			opt.Password = c.Password
		}
		if c.TLS && opt.TLSConfig == nil {
			opt.TLSConfig = tlsConfig(opt.Addr)
		}
		if err := trustCA(opt.TLSConfig, c.TLSCAFile); err != nil {
			return nil, err
		}
		opt.ClientName = name
		opt.MaintNotificationsConfig = noMaintNotifications()
		applyTuning(c, tuning{&opt.DialTimeout, &opt.ReadTimeout, &opt.WriteTimeout, &opt.PoolSize, &opt.MaxRetries, &opt.DialerRetries})
		return durable(redis.NewClient(opt), c.Durability), nil
	case "cluster":
		opt := &redis.ClusterOptions{
			Addrs:                    c.ClusterAddrs,
			ClientName:               name,
			Username:                 c.Username,
			Password:                 c.Password,
			MaintNotificationsConfig: noMaintNotifications(),
		}
		if c.TLS {
			opt.TLSConfig = tlsConfig("")
		}
		if err := trustCA(opt.TLSConfig, c.TLSCAFile); err != nil {
			return nil, err
		}
		applyTuning(c, tuning{&opt.DialTimeout, &opt.ReadTimeout, &opt.WriteTimeout, &opt.PoolSize, &opt.MaxRetries, &opt.DialerRetries})
		return clusterDurable(redis.NewClusterClient(opt), c.Durability), nil
	case "sentinel":
		opt := &redis.FailoverOptions{
			MasterName:       c.Sentinel.MasterName,
			SentinelAddrs:    c.Sentinel.Addrs,
			SentinelPassword: c.Sentinel.Password,
			ClientName:       name,
			Username:         c.Username,
			Password:         c.Password,
		}
		if c.TLS {
			opt.TLSConfig = tlsConfig("")
		}
		if err := trustCA(opt.TLSConfig, c.TLSCAFile); err != nil {
			return nil, err
		}
		applyTuning(c, tuning{&opt.DialTimeout, &opt.ReadTimeout, &opt.WriteTimeout, &opt.PoolSize, &opt.MaxRetries, &opt.DialerRetries})
		return durable(redis.NewFailoverClient(opt), c.Durability), nil
	default:
		return nil, fmt.Errorf("redisconn: more than one Redis topology configured (%s); set exactly one of redis.url, redis.cluster-addrs, redis.sentinel", Describe(c))
	}
}

// topology names the configured topology: "", "url", "cluster", "sentinel" or "multiple".
func topology(c Options) string {
	set := c.Topologies()
	switch len(set) {
	case 0:
		return ""
	case 1:
		return map[string]string{"redis.url": "url", "redis.cluster-addrs": "cluster", "redis.sentinel": "sentinel"}[set[0]]
	default:
		return "multiple"
	}
}

// tuning points at one topology's option fields that configuration overrides.
type tuning struct {
	dial, read, write          *time.Duration
	pool, retries, dialRetries *int
}

func applyTuning(c Options, t tuning) {
	if c.DialTimeout > 0 {
		*t.dial = c.DialTimeout
	}
	if c.ReadTimeout > 0 {
		*t.read = c.ReadTimeout
	}
	if c.WriteTimeout > 0 {
		*t.write = c.WriteTimeout
	}
	if c.PoolSize > 0 {
		*t.pool = c.PoolSize
	}
	if c.Durability.On() {
		// A write's reply now includes its WAIT: the read timeout covers the server's answer
		// plus the deliberate wait.
		*t.read = cmp.Or(*t.read, goRedisReadTimeout) + c.Durability.WaitTimeout
	}
	// go-redis treats 0 as "use the default" and -1 as "none"; config uses 0 for none.
	*t.retries = retriesOption(c.MaxRetries)
	*t.dialRetries = max(c.DialRetries, 1)
}

// goRedisReadTimeout is go-redis's default read timeout, used when redis.read-timeout is 0.
const goRedisReadTimeout = 3 * time.Second

func retriesOption(n int) int {
	if n <= 0 {
		return -1
	}
	return n
}

// tlsConfig returns the TLS settings for Redis connections. With an empty ServerName, the
// host of each dialed address is verified (go-redis dials with tls.DialWithDialer).
func tlsConfig(addr string) *tls.Config {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if host, _, err := net.SplitHostPort(addr); err == nil {
		cfg.ServerName = host
	}
	return cfg
}

// trustCA makes cfg verify servers against the CA certificates in the PEM file caFile
// (nothing to do without TLS or without a file).
func trustCA(cfg *tls.Config, caFile string) error {
	if cfg == nil || caFile == "" {
		return nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return fmt.Errorf("redisconn: redis.tls-ca-file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return fmt.Errorf("redisconn: redis.tls-ca-file %s holds no PEM certificate", caFile)
	}
	cfg.RootCAs = pool
	return nil
}

// Describe returns a one-line description of c's topology and addresses for logs. It never
// includes a password.
func Describe(c Options) string {
	var parts []string
	if c.URL != "" {
		parts = append(parts, "standalone "+describeURL(c.URL))
	}
	if len(c.ClusterAddrs) > 0 {
		parts = append(parts, "cluster "+strings.Join(c.ClusterAddrs, ","))
	}
	if c.Sentinel.MasterName != "" || len(c.Sentinel.Addrs) > 0 {
		parts = append(parts, fmt.Sprintf("sentinel master %q via %s", c.Sentinel.MasterName, strings.Join(c.Sentinel.Addrs, ",")))
	}
	if len(parts) == 0 {
		return "none (memory backend)"
	}
	s := strings.Join(parts, " + ")
	if c.Username != "" {
		s += " as user " + c.Username
	}
	if c.TLS && c.URL == "" {
		s += " (TLS)"
	}
	if d := c.Durability; d.On() {
		s += fmt.Sprintf(", writes wait for %d replicas (%s)", d.WaitReplicas, d.WaitTimeout)
	}
	return s
}

// describeURL returns scheme://[user@]host[/db] of a Redis URL, dropping any password.
func describeURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	out := u.Scheme + "://"
	if u.User != nil && u.User.Username() != "" {
		out += u.User.Username() + "@"
	}
	out += u.Host + u.Path
	if u.Scheme == "rediss" {
		out += " (TLS)"
	}
	return out
}

// Ping checks that Redis answers: the server for standalone and Sentinel (the current master),
// every master for Cluster. Failures are EUNAVAILABLE errors.
func Ping(ctx context.Context, client redis.UniversalClient) error {
	var err error
	if cc := AsCluster(client); cc != nil {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			if err := node.Ping(ctx).Err(); err != nil {
				return fmt.Errorf("%s: %w", node.Options().Addr, err)
			}
			return nil
		})
	} else {
		err = client.Ping(ctx).Err()
	}
	if err != nil {
		return redstate.Wrap(redstate.EUNAVAILABLE, err, "redis is not reachable")
	}
	return nil
}

// noMaintNotifications turns off go-redis's maintenance notifications (a Redis Enterprise and
// Redis Cloud handshake, CLIENT MAINT_NOTIFICATIONS, that open-source Redis refuses). In its
// default "auto" mode a refused handshake makes go-redis record "disabled" in options that a
// dedicated connection (Conn, used by the queue and the durability hook) shares with its
// client under a different lock: a data race. The Sentinel client has them off already.
func noMaintNotifications() *maintnotifications.Config {
	return &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
}
