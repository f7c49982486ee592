package redisconn_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/redstate/redstate/redisconn"
)

func TestDefaultOptions_AreValidAndUnconfigured(t *testing.T) {
	o := redisconn.DefaultOptions()
	if err := o.Validate(); err != nil || o.Configured() {
		t.Fatalf("Validate = %v, Configured = %v", err, o.Configured())
	}
}

// TestOptionsValidate_ReportsEveryProblem: one call names every bad key.
func TestOptionsValidate_ReportsEveryProblem(t *testing.T) {
	o := redisconn.DefaultOptions()
	o.URL = "http://h:1"
	o.ClusterAddrs = []string{"nohostport"}
	o.PoolSize = -1
	o.DialRetries = 0
	err := o.Validate()
	want := []string{
		"redis: redis.url and redis.cluster-addrs are all set",
		`redis.url: scheme must be redis or rediss (TLS), got "http"`,
		`redis.cluster-addrs[0]: "nohostport" is not host:port`,
		"redis.pool-size: must not be negative, got -1",
		"redis.dial-retries: must be at least 1, got 0",
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
