package redisconn

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// Options select and tune the Redis backend (the configuration section redis). With neither
// URL nor ClusterAddrs nor Sentinel set, every block uses its embedded memory backend.
type Options struct {
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
	// Durability makes every write wait for replicas (off by default); see Durability.
	Durability Durability `koanf:"durability"`
	// ClientCache caches designated reads in process memory (off by default); see CacheOptions.
	ClientCache CacheOptions `koanf:"client-cache"`
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

// DefaultOptions returns the defaults: no topology (memory backends), dial timeout 2 s, read and
// write timeouts 1 s, one retry and one dial attempt, writes not waiting for replicas (wait
// timeout 100 ms once they do).
func DefaultOptions() Options {
	return Options{DialTimeout: 2 * time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: 1, DialRetries: 1,
		Durability: Durability{WaitTimeout: DefaultWaitTimeout}, ClientCache: DefaultCacheOptions()}
}

// Configured reports whether any Redis topology is configured; without one every block uses
// its embedded memory backend.
func (o Options) Configured() bool { return len(o.Topologies()) > 0 }

// Topologies returns the configuration keys of every Redis topology that is set ("redis.url",
// "redis.cluster-addrs", "redis.sentinel"); at most one is valid, none means memory backends.
func (o Options) Topologies() []string {
	var set []string
	if o.URL != "" {
		set = append(set, "redis.url")
	}
	if len(o.ClusterAddrs) > 0 {
		set = append(set, "redis.cluster-addrs")
	}
	if o.Sentinel.MasterName != "" || len(o.Sentinel.Addrs) > 0 {
		set = append(set, "redis.sentinel")
	}
	return set
}

// Validate reports every problem of o at once, each naming its configuration key (redis.*).
func (o Options) Validate() error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if set := o.Topologies(); len(set) > 1 {
		add("redis", "%s are all set; configure exactly one topology (url, cluster-addrs or sentinel), or none for the memory backend", strings.Join(set, " and "))
	}
	if o.URL != "" {
		u, err := url.Parse(o.URL)
		switch {
		case err != nil:
			add("redis.url", "is not a URL: %v", errors.Unwrap(err))
		case u.Scheme != "redis" && u.Scheme != "rediss":
			add("redis.url", "scheme must be redis or rediss (TLS), got %q (e.g. redis://127.0.0.1:6379/0)", u.Scheme)
		case u.Host == "":
			add("redis.url", "has no host (e.g. redis://127.0.0.1:6379/0)")
		default:
			if db := strings.Trim(u.Path, "/"); db != "" {
				if n, err := strconv.Atoi(db); err != nil || n < 0 {
					add("redis.url", "database %q must be a non-negative number", db)
				}
			}
		}
	}
	for i, a := range o.ClusterAddrs {
		if err := checkHostPort(a); err != nil {
			add(fmt.Sprintf("redis.cluster-addrs[%d]", i), "%s", err)
		}
	}
	if o.Sentinel.MasterName != "" || len(o.Sentinel.Addrs) > 0 {
		if o.Sentinel.MasterName == "" {
			add("redis.sentinel.master-name", "must be set when redis.sentinel.addrs is")
		}
		if len(o.Sentinel.Addrs) == 0 {
			add("redis.sentinel.addrs", "must list at least one sentinel when redis.sentinel.master-name is set")
		}
	}
	for i, a := range o.Sentinel.Addrs {
		if err := checkHostPort(a); err != nil {
			add(fmt.Sprintf("redis.sentinel.addrs[%d]", i), "%s", err)
		}
	}
	if o.Sentinel.Password != "" && o.Sentinel.MasterName == "" {
		add("redis.sentinel.password", "is set but no sentinel is configured")
	}
	for _, t := range []struct {
		key string
		d   time.Duration
	}{{"redis.dial-timeout", o.DialTimeout}, {"redis.read-timeout", o.ReadTimeout}, {"redis.write-timeout", o.WriteTimeout}} {
		if t.d < 0 {
			add(t.key, "must not be negative, got %s", t.d)
		}
	}
	if o.PoolSize < 0 {
		add("redis.pool-size", "must not be negative, got %d (0 means go-redis's default)", o.PoolSize)
	}
	if o.TLSCAFile != "" {
		if st, err := os.Stat(o.TLSCAFile); err != nil || st.IsDir() {
			add("redis.tls-ca-file", "must be a readable PEM file, got %q", o.TLSCAFile)
		}
	}
	if o.MaxRetries < 0 {
		add("redis.max-retries", "must not be negative, got %d (0 means no retries)", o.MaxRetries)
	}
	if o.DialRetries < 1 {
		add("redis.dial-retries", "must be at least 1, got %d", o.DialRetries)
	}
	if d := o.Durability; d.WaitReplicas < 0 {
		add("redis.durability.wait-replicas", "must not be negative, got %d (0 means writes do not wait for replicas)", d.WaitReplicas)
	} else if d.On() {
		if d.WaitTimeout < time.Millisecond || d.WaitTimeout%time.Millisecond != 0 {
			add("redis.durability.wait-timeout", "must be a whole number of milliseconds, at least 1ms, got %s (WAIT 0 would block forever)", d.WaitTimeout)
		}
	}
	o.ClientCache.validate(add)
	return errors.Join(errs...)
}

// checkHostPort checks a "host:port" address.
func checkHostPort(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port (%v)", addr, errors.Unwrap(err))
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("%q has an invalid port %q", addr, port)
	}
	return nil
}
