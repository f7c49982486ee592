package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate/redisconn"
)

func TestValidate_Messages(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"two topologies", func(c *Config) { c.Redis.URL = "redis://h:1"; c.Redis.ClusterAddrs = []string{"h:2"} },
			"redis: redis.url and redis.cluster-addrs are all set; configure exactly one topology"},
		{"url scheme", func(c *Config) { c.Redis.URL = "http://h:1" }, `redis.url: scheme must be redis or rediss (TLS), got "http"`},
		{"url host", func(c *Config) { c.Redis.URL = "redis://" }, "redis.url: has no host"},
		{"url db", func(c *Config) { c.Redis.URL = "redis://h:1/x" }, `redis.url: database "x" must be a non-negative number`},
		{"cluster addr", func(c *Config) { c.Redis.ClusterAddrs = []string{"nohostport"} }, `redis.cluster-addrs[0]: "nohostport" is not host:port`},
		{"sentinel without addrs", func(c *Config) { c.Redis.Sentinel.MasterName = "m" }, "redis.sentinel.addrs: must list at least one sentinel"},
		{"sentinel without master", func(c *Config) { c.Redis.Sentinel.Addrs = []string{"h:1"} }, "redis.sentinel.master-name: must be set"},
		{"wait-replicas negative", func(c *Config) { c.Redis.Durability.WaitReplicas = -1 }, "redis.durability.wait-replicas: must not be negative, got -1"},
		{"wait-timeout", func(c *Config) { c.Redis.Durability = redisconn.Durability{WaitReplicas: 1, WaitTimeout: 0} },
			"redis.durability.wait-timeout: must be a whole number of milliseconds, at least 1ms, got 0s"},
		{"policy", func(c *Config) { c.Publish.BuildStatus.Resilience.Policy = "retry" },
			`publish.build-status.resilience.policy: "retry" is not one of fail-fast, fallback`},
		{"fallback", func(c *Config) { c.Publish.BuildStatus.Resilience.Fallback = "disk" },
			`publish.build-status.resilience.fallback: "disk" is not supported; the only fallback store is memory`},
		{"threshold 0", func(c *Config) { c.Publish.BuildStatus.Resilience.FailureRateThreshold = 0 },
			"publish.build-status.resilience.failure-rate-threshold: must be a percentage between 1 and 100, got 0"},
		{"threshold 101", func(c *Config) { c.Publish.BuildStatus.Resilience.FailureRateThreshold = 101 }, "between 1 and 100, got 101"},
		{"window", func(c *Config) { c.Publish.BuildStatus.Resilience.SlidingWindowSize = 0 },
			"publish.build-status.resilience.sliding-window-size: must be at least 1, got 0"},
		{"ttl-days", func(c *Config) { c.Publish.BuildStatus.TTLDays = 0 }, "publish.build-status.ttl-days: must be at least 1 (or set publish.build-status.ttl), got 0"},
		{"negative ttl", func(c *Config) { c.Publish.BuildStatus.TTL = -time.Second }, "publish.build-status.ttl: must not be negative"},
		{"role", func(c *Config) { c.Auth.Tokens = []Token{{Name: "a", Token: "t", Roles: []string{"root"}}} },
			`auth.tokens[0].roles: unknown role "root"; roles are read, write and admin`},
		{"empty token", func(c *Config) { c.Auth.Tokens = []Token{{Name: "a", Roles: []string{"read"}}} }, "auth.tokens[0].token: must not be empty"},
		{"empty name", func(c *Config) { c.Auth.Tokens = []Token{{Token: "x", Roles: []string{"read"}}} }, "auth.tokens[0].name: must not be empty"},
		{"no roles", func(c *Config) { c.Auth.Tokens = []Token{{Name: "a", Token: "x"}} }, "auth.tokens[0].roles: must list at least one"},
		{"dup name", func(c *Config) {
			c.Auth.Tokens = []Token{{Name: "a", Token: "x", Roles: []string{"read"}}, {Name: "a", Token: "y", Roles: []string{"read"}}}
		}, `auth.tokens[1].name: "a" is also the name of auth.tokens[0]`},
		{"dup token", func(c *Config) {
			c.Auth.Tokens = []Token{{Name: "a", Token: "x", Roles: []string{"read"}}, {Name: "b", Token: "x", Roles: []string{"read"}}}
		}, "auth.tokens[1].token: is the same secret as auth.tokens[0]"},
		{"log level", func(c *Config) { c.Log.Level = "verbose" }, `log.level: "verbose" is not one of debug, info, warn, error`},
		{"log format", func(c *Config) { c.Log.Format = "xml" }, `log.format: "xml" is not one of json, text`},
		{"namespace space", func(c *Config) { c.Namespace = "prod x" }, `namespace: "prod x" contains " "`},
		{"namespace glob", func(c *Config) { c.Namespace = "prod*" }, `namespace: "prod*" contains "*"`},
		{"namespace brace", func(c *Config) { c.Namespace = "{prod}" }, `namespace: "{prod}" contains "{"`},
		{"key prefix", func(c *Config) { c.Publish.BuildStatus.KeyPrefix = "a?" }, `publish.build-status.key-prefix: "a?" contains "?"`},
		{"addr", func(c *Config) { c.Server.Addr = "8080" }, `server.addr: "8080" is not host:port`},
		{"feed repair interval", func(c *Config) { c.Feed.RepairInterval = 0 }, "feed.repair-interval: must be positive, got 0s"},
		{"feed breaker threshold", func(c *Config) { c.Feed.Resilience.FailureRateThreshold = 0 },
			"feed.resilience.failure-rate-threshold: must be a percentage between 1 and 100, got 0"},
		{"feed breaker wait", func(c *Config) { c.Feed.Resilience.WaitDurationInOpenState = -time.Second },
			"feed.resilience.wait-duration-in-open-state: must be positive, got -1s"},
		{"feed breaker window", func(c *Config) { c.Feed.Resilience.SlidingWindowSize = 0 }, "feed.resilience.sliding-window-size: must be at least 1, got 0"},
		// One rule each for the disagreements config and the blocks had (docs/configuration.md):
		// a liveness interval above half the TTL is refused (executor.Options refuse it too),
		// and a hybrid threshold below 1 is refused (feed.Options' "negative: every author" is
		// not reachable from the configuration).
		{"liveness interval over half the ttl", func(c *Config) { c.Executor.LivenessTTL = 8 * time.Second },
			"executor.liveness-interval: 5s must be at most half of executor.liveness-ttl (8s)"},
		{"hybrid threshold 0", func(c *Config) { c.Feed.HybridThreshold = 0 }, "feed.hybrid-threshold: must be at least 1, got 0"},
		{"hybrid threshold negative", func(c *Config) { c.Feed.HybridThreshold = -1 }, "feed.hybrid-threshold: must be at least 1, got -1"},
		{"executor store needs redis", func(c *Config) { c.Executor.Persistence.StoreType = "redis" },
			"executor.persistence.store-type: is redis but no Redis is configured"},
		{"database scheme", func(c *Config) { c.Database.URL = "oracle://app@db/x" },
			"database.url: must be sqlite:<path>, postgres://user:password@host:5432/db or mysql://user:password@host:3306/db"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			tc.mutate(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant it to contain %q", err, tc.want)
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("err is %T, want *ValidationError", err)
			}
		})
	}
}

func TestValidate_ReportsEveryProblem(t *testing.T) {
	c := Default()
	c.Log.Level = "loud"
	c.Log.Format = "xml"
	var ve *ValidationError
	if err := c.Validate(); !errors.As(err, &ve) || len(ve.Problems) != 2 {
		t.Fatalf("err = %v", err)
	}
}

func TestValidate_AcceptsEachTopology(t *testing.T) {
	for name, mutate := range map[string]func(*Config){
		"memory":  func(c *Config) {},
		"url":     func(c *Config) { c.Redis.URL = "rediss://app:pw@127.0.0.1:6380/2" },
		"cluster": func(c *Config) { c.Redis.ClusterAddrs = []string{"127.0.0.1:7000", "[::1]:7001"} },
		"cluster with wait-replicas": func(c *Config) {
			c.Redis.ClusterAddrs = []string{"127.0.0.1:7000"}
			c.Redis.Durability.WaitReplicas = 1
		},
		"sentinel": func(c *Config) {
			c.Redis.Sentinel = redisconn.Sentinel{MasterName: "m", Addrs: []string{"127.0.0.1:26379"}, Password: "p"}
		},
		"ttl without days": func(c *Config) {
			c.Publish.BuildStatus.TTLDays = 0
			c.Publish.BuildStatus.TTL = time.Minute
		},
		"tokens": func(c *Config) {
			c.Auth.Tokens = []Token{{Name: "a", Token: "x", Roles: []string{"read", "write", "admin"}}}
		},
		"sqlite database":   func(c *Config) { c.Database.URL = "sqlite:/var/lib/redstate/redstate.db" },
		"postgres database": func(c *Config) { c.Database.URL = "postgres://app:${PGPASSWORD}@db:5432/redstate" },
		"mysql database":    func(c *Config) { c.Database.URL = "mysql://app:${MYSQL_PASSWORD}@db:3306/redstate?tls=true" },
		"mariadb database":  func(c *Config) { c.Database.URL = "mariadb://app@db/redstate" },
	} {
		c := Default()
		mutate(&c)
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestRedacted_HidesSecretsWithoutTouchingOriginal(t *testing.T) {
	c := Default()
	c.Redis.URL = "redis://app:hunter2@127.0.0.1:6379/0"
	c.Redis.Password = "pw"
	c.Redis.Sentinel.Password = "spw"
	c.Auth.Tokens = []Token{{Name: "ci", Token: "tok", Roles: []string{"write"}}}
	r := c.Redacted()
	if r.Redis.URL != "redis://app:***@127.0.0.1:6379/0" {
		t.Errorf("url = %q", r.Redis.URL)
	}
	if r.Redis.Password != "***" || r.Redis.Sentinel.Password != "***" || r.Auth.Tokens[0].Token != "***" || r.Auth.Tokens[0].Name != "ci" {
		t.Errorf("redacted = %+v", r)
	}
	if c.Auth.Tokens[0].Token != "tok" || c.Redis.Password != "pw" {
		t.Error("Redacted modified the original")
	}
	b, err := r.YAML()
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"hunter2", "tok\n", "spw", ": pw"} {
		if strings.Contains(string(b), secret) {
			t.Errorf("YAML leaks %q:\n%s", secret, b)
		}
	}
}
