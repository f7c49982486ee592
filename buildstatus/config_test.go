package buildstatus

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestDefaultConfig_AreTheSeeds(t *testing.T) {
	o := DefaultConfig()
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if o.EffectiveTTL() != DefaultTTL || o.KeyPrefix != DefaultKeyPrefix {
		t.Fatalf("defaults = %+v", o)
	}
	o.TTL = time.Minute
	if o.EffectiveTTL() != time.Minute {
		t.Fatalf("TTL does not override TTLDays: %s", o.EffectiveTTL())
	}
}

// TestConfigValidate_ReportsEveryProblem: the registry's and its resilience section's problems
// come in one error, each under publish.build-status.
func TestConfigValidate_ReportsEveryProblem(t *testing.T) {
	o := DefaultConfig()
	o.TTLDays = 0
	o.KeyPrefix = "a*"
	o.Resilience.Policy = "retry"
	o.Resilience.SlidingWindowSize = 0
	err := o.Validate()
	want := []string{
		"publish.build-status.ttl-days: must be at least 1 (or set publish.build-status.ttl), got 0",
		`publish.build-status.key-prefix: "a*" contains "*"`,
		`publish.build-status.resilience.policy: "retry" is not one of fail-fast, fallback`,
		"publish.build-status.resilience.sliding-window-size: must be at least 1, got 0",
	}
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) {
		t.Fatalf("err = %v", err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("err lacks %q:\n%v", w, err)
		}
	}
	if n := strings.Count(err.Error(), "publish.build-status."); n != len(want)+1 { // +1: the ttl hint
		t.Errorf("%d keys named, want %d:\n%v", n, len(want)+1, err)
	}
}
