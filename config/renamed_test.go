package config

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// renamedValues are a non-default value for every renamed key, as a file or the environment
// writes it.
var renamedValues = map[string]string{
	"index.prefix":                             "old_index",
	"feed.prefix":                              "oldfeed:",
	"executor.persistence.redis.namespace":     "old-executor",
	"feed.breaker.failure-rate-threshold":      "60",
	"feed.breaker.wait-duration-in-open-state": "7s",
	"feed.breaker.sliding-window-size":         "20",
	"feed.breaker.probe-interval":              "500ms",
}

// yamlOf writes flat keys as a nested YAML document, one line per key.
func yamlOf(keys map[string]string) string {
	var b strings.Builder
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		b.WriteString(k + ": " + strconv.Quote(keys[k]) + "\n")
	}
	return b.String()
}

// withNewNames returns keys with every old name replaced by its new one.
func withNewNames(keys map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range keys {
		for _, r := range renamedKeys {
			if r.Old == k {
				k = r.New
			}
		}
		out[k] = v
	}
	return out
}

func TestRenamedKeys_TableNamesCurrentKeysOnly(t *testing.T) {
	_, known := knownKeys()
	if len(renamedValues) != len(renamedKeys) {
		t.Fatalf("renamedValues has %d keys, the table %d: give every renamed key a test value", len(renamedValues), len(renamedKeys))
	}
	for _, r := range renamedKeys {
		if _, ok := known[r.New]; !ok {
			t.Errorf("%s is renamed to %s, which is not a key", r.Old, r.New)
		}
		if _, ok := known[r.Old]; ok {
			t.Errorf("%s is renamed but still a key", r.Old)
		}
		if _, ok := renamedValues[r.Old]; !ok {
			t.Errorf("renamedValues has no value for %s", r.Old)
		}
	}
}

// TestRenamedKeys_FileWithOldNamesLoadsAsWithNewNames: a file valid before the renames
// (every old name, nested or dotted) gives the same configuration as one with the new names,
// and a deprecation naming the new key for each old one.
func TestRenamedKeys_FileWithOldNamesLoadsAsWithNewNames(t *testing.T) {
	want, err := load(writeFile(t, yamlOf(withNewNames(renamedValues))), nil, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if want.Deprecations != nil {
		t.Fatalf("new names gave deprecations: %v", want.Deprecations)
	}
	if want.Index.KeyPrefix != "old_index" || want.Feed.KeyPrefix != "oldfeed:" || want.Executor.Persistence.Redis.KeyPrefix != "old-executor" ||
		want.Feed.Resilience.FailureRateThreshold != 60 || want.Feed.Resilience.WaitDurationInOpenState != 7*time.Second ||
		want.Feed.Resilience.SlidingWindowSize != 20 || want.Feed.Resilience.ProbeInterval != 500*time.Millisecond {
		t.Fatalf("new names not loaded: index %q feed %q executor %q breaker %+v", want.Index.KeyPrefix, want.Feed.KeyPrefix,
			want.Executor.Persistence.Redis.KeyPrefix, want.Feed.Resilience)
	}
	nested := `
index:
  prefix: old_index
feed:
  prefix: "oldfeed:"
  breaker:
    failure-rate-threshold: 60
    wait-duration-in-open-state: 7s
    sliding-window-size: 20
    probe-interval: 500ms
executor:
  persistence:
    redis:
      namespace: old-executor
`
	for name, doc := range map[string]string{"nested": nested, "dotted": yamlOf(renamedValues)} {
		t.Run(name, func(t *testing.T) {
			path := writeFile(t, doc)
			got, err := load(path, nil, envOf(nil))
			if err != nil {
				t.Fatal(err)
			}
			deps := got.Deprecations
			got.Deprecations = nil
			if !reflect.DeepEqual(got, want) {
				t.Errorf("old names load differently:\n got %+v\nwant %+v", got, want)
			}
			if err := got.Validate(); err != nil {
				t.Errorf("does not validate: %v", err)
			}
			if len(deps) != len(renamedKeys) {
				t.Errorf("deprecations = %v, want one per renamed key", deps)
			}
			for _, d := range deps {
				if d.Source != "config file "+path || !slices.Contains(renamedKeys, RenamedKey{Old: d.Old, New: d.New}) {
					t.Errorf("deprecation %+v", d)
				}
			}
		})
	}
}

// TestRenamedKeys_OldEnvironmentNames: each old key's REDSTATE_* variable sets the new key,
// with a deprecation naming the variable.
func TestRenamedKeys_OldEnvironmentNames(t *testing.T) {
	for _, r := range renamedKeys {
		t.Run(r.Old, func(t *testing.T) {
			v := renamedValues[r.Old]
			want, err := load("", nil, envOf(map[string]string{EnvName(r.New): v}))
			if err != nil {
				t.Fatal(err)
			}
			if reflect.DeepEqual(want, Default()) {
				t.Fatalf("%s=%s changes nothing: pick another test value", EnvName(r.New), v)
			}
			got, err := load("", nil, envOf(map[string]string{EnvName(r.Old): v}))
			if err != nil {
				t.Fatal(err)
			}
			wantDep := []Deprecation{{Old: r.Old, New: r.New, Source: "environment " + EnvName(r.Old)}}
			if !reflect.DeepEqual(got.Deprecations, wantDep) {
				t.Errorf("deprecations = %+v, want %+v", got.Deprecations, wantDep)
			}
			got.Deprecations = nil
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s loads differently from %s", EnvName(r.Old), EnvName(r.New))
			}
			// The same value under both names is accepted (with the warning).
			if _, err := load("", nil, envOf(map[string]string{EnvName(r.Old): v, EnvName(r.New): v})); err != nil {
				t.Errorf("same value twice: %v", err)
			}
		})
	}
}

// TestRenamedKeys_OldAndNewDisagreeing: an old name and its new name with different values in
// one layer is an error naming both.
func TestRenamedKeys_OldAndNewDisagreeing(t *testing.T) {
	_, err := load(writeFile(t, "index:\n  prefix: a\n  key-prefix: b\n"), nil, envOf(nil))
	if err == nil || !strings.Contains(err.Error(), "index.prefix and index.key-prefix are both set, to different values (a and b)") {
		t.Errorf("file: %v", err)
	}
	_, err = load(writeFile(t, "feed.breaker.probe-interval: 1s\nfeed:\n  resilience:\n    probe-interval: 2s\n"), nil, envOf(nil))
	if err == nil || !strings.Contains(err.Error(), "feed.breaker.probe-interval and feed.resilience.probe-interval are both set") {
		t.Errorf("file, dotted and nested: %v", err)
	}
	// Equal durations in different spellings agree.
	if _, err := load(writeFile(t, "feed.breaker.probe-interval: 1s\nfeed.resilience.probe-interval: 1000ms\n"), nil, envOf(nil)); err != nil {
		t.Errorf("agreeing durations: %v", err)
	}
	_, err = load("", nil, envOf(map[string]string{
		"REDSTATE_EXECUTOR_PERSISTENCE_REDIS_NAMESPACE":  "a",
		"REDSTATE_EXECUTOR_PERSISTENCE_REDIS_KEY_PREFIX": "b",
	}))
	if err == nil || !strings.Contains(err.Error(), "REDSTATE_EXECUTOR_PERSISTENCE_REDIS_NAMESPACE and REDSTATE_EXECUTOR_PERSISTENCE_REDIS_KEY_PREFIX") ||
		!strings.Contains(err.Error(), "executor.persistence.redis.namespace and executor.persistence.redis.key-prefix are both set") {
		t.Errorf("environment: %v", err)
	}
}

// TestRenamedKeys_LayersStillOverride: an old name in one layer and the new name in a later
// one are not a conflict: the later layer wins, as for any key.
func TestRenamedKeys_LayersStillOverride(t *testing.T) {
	cfg, err := load(writeFile(t, "feed:\n  prefix: \"file:\"\n  breaker:\n    sliding-window-size: 30\n  resilience:\n    probe-interval: 1s\n"), nil,
		envOf(map[string]string{"REDSTATE_FEED_KEY_PREFIX": "env:"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Feed.KeyPrefix != "env:" || cfg.Feed.Resilience.SlidingWindowSize != 30 || cfg.Feed.Resilience.ProbeInterval != time.Second ||
		cfg.Feed.Resilience.WaitDurationInOpenState != 5*time.Second {
		t.Fatalf("feed = %q %+v", cfg.Feed.KeyPrefix, cfg.Feed.Resilience)
	}
	if len(cfg.Deprecations) != 2 {
		t.Errorf("deprecations = %v, want feed.prefix and feed.breaker.sliding-window-size", cfg.Deprecations)
	}
}

// TestRenamedKeys_NoFlagSetsAnOldName: every flag sets a current key, so the flag layer has
// no old names to accept.
func TestRenamedKeys_NoFlagSetsAnOldName(t *testing.T) {
	_, known := knownKeys()
	for _, b := range flagBindings {
		if _, ok := known[b.Key]; !ok {
			t.Errorf("--%s sets %s, which is not a key", b.Flag, b.Key)
		}
	}
}

// TestBreakerConfig_SameKeysInBothSections: the build-status registry's and the feed's breaker
// are one type under the same keys (the build-status one squashed into its resilience
// section), read from the file and the environment and printed back by YAML.
func TestBreakerConfig_SameKeysInBothSections(t *testing.T) {
	breaker := "    failure-rate-threshold: 70\n    wait-duration-in-open-state: 3s\n    sliding-window-size: 7\n    probe-interval: 100ms\n"
	doc := "publish:\n  build-status:\n    resilience:\n" + strings.ReplaceAll(breaker, "    ", "      ") + "feed:\n  resilience:\n" + breaker
	cfg, err := load(writeFile(t, doc), nil, envOf(map[string]string{"REDSTATE_PUBLISH_BUILD_STATUS_RESILIENCE_SLIDING_WINDOW_SIZE": "9"}))
	if err != nil {
		t.Fatal(err)
	}
	bs, fd := cfg.Publish.BuildStatus.Resilience.BreakerConfig, cfg.Feed.Resilience
	if bs.FailureRateThreshold != 70 || bs.WaitDurationInOpenState != 3*time.Second || bs.SlidingWindowSize != 9 || bs.ProbeInterval != 100*time.Millisecond {
		t.Errorf("build-status breaker = %+v", bs)
	}
	if fd.FailureRateThreshold != 70 || fd.WaitDurationInOpenState != 3*time.Second || fd.SlidingWindowSize != 7 || fd.ProbeInterval != 100*time.Millisecond {
		t.Errorf("feed breaker = %+v", fd)
	}
	printed, err := cfg.YAML()
	if err != nil {
		t.Fatal(err)
	}
	again, err := load(writeFile(t, string(printed)), nil, envOf(nil))
	if err != nil {
		t.Fatalf("printed configuration does not load: %v\n%s", err, printed)
	}
	if again.Publish.BuildStatus.Resilience != cfg.Publish.BuildStatus.Resilience || again.Feed.Resilience != cfg.Feed.Resilience {
		t.Errorf("printed and loaded again: %+v %+v\n%s", again.Publish.BuildStatus.Resilience, again.Feed.Resilience, printed)
	}
	if d := Default(); d.Feed.Resilience.WaitDurationInOpenState != 5*time.Second || d.Publish.BuildStatus.Resilience.WaitDurationInOpenState != 10*time.Second {
		t.Errorf("default waits: feed %s, build status %s", d.Feed.Resilience.WaitDurationInOpenState, d.Publish.BuildStatus.Resilience.WaitDurationInOpenState)
	}
}
