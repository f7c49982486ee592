package executor_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/executor"
)

func TestDefaultConfig_IsValid(t *testing.T) {
	if err := executor.DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestConfigValidate_ReportsEveryProblem: one call names every bad key.
func TestConfigValidate_ReportsEveryProblem(t *testing.T) {
	c := executor.DefaultConfig()
	c.Persistence.StoreType = "disk"
	c.Persistence.OnRedisUnavailable = "retry"
	c.Persistence.Redis.TTL.Lock = time.Millisecond
	c.Persistence.Redis.LockPipelining = "on"
	c.HeartbeatInterval = 0
	c.Handlers = []executor.HandlerConfig{{Name: "h", URL: "ftp://x"}, {Name: "h", URL: "http://x", Timeout: -time.Second}}
	err := c.Validate()
	want := []string{
		`executor.persistence.store-type: must be redis or memory, got "disk"`,
		`executor.persistence.on-redis-unavailable: must be memory (degrade) or fail, got "retry"`,
		"executor.persistence.redis.ttl.lock: must be at least 1s (or 0 for the default), got 1ms",
		`executor.persistence.redis.lock-pipelining: must be auto, batch or off, got "on"`,
		"executor.heartbeat-interval: must be positive, got 0s",
		`executor.handlers[0].url: must be an http(s) URL, got "ftp://x"`,
		`executor.handlers[1].name: "h" is also the name of executor.handlers[0]`,
		"executor.handlers[1].timeout: must not be negative, got -1s",
	}
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) || len(joined.Unwrap()) != len(want) {
		t.Fatalf("err = %v, want %d problems", err, len(want))
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("err lacks %q:\n%v", w, err)
		}
	}
}

// TestLiveness_OneRule: a liveness interval above half the liveness TTL is refused by the
// configuration and by the runtime's Options alike; only an unset interval is lowered to half
// the TTL.
func TestLiveness_OneRule(t *testing.T) {
	c := executor.DefaultConfig()
	c.LivenessTTL, c.LivenessInterval = 8*time.Second, 5*time.Second
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "executor.liveness-interval: 5s must be at most half of executor.liveness-ttl (8s)") {
		t.Fatalf("Config.Validate = %v", err)
	}
	st := newMemStores().Stores
	_, err := executor.New(executor.Options{Stores: st, LivenessTTL: 8 * time.Second, LivenessInterval: 5 * time.Second, Logger: quietLogger()})
	if !redstate.IsCode(err, redstate.EINVALID) || !strings.Contains(err.Error(), "at most half") {
		t.Fatalf("New with interval > TTL/2 = %v, want EINVALID", err)
	}
	if _, err := executor.New(executor.Options{Stores: st, LivenessTTL: 8 * time.Second, Logger: quietLogger()}); err != nil {
		t.Fatalf("New with an unset interval (lowered to 4s) = %v", err)
	}
	c.LivenessInterval = 4 * time.Second
	if err := c.Validate(); err != nil {
		t.Fatalf("interval exactly half: %v", err)
	}
}
