package config

import (
	"fmt"
	"sort"
	"strings"
)

// RenamedKey is a configuration key that was renamed: a file, environment variable or flag
// that still gives Old sets New, with a deprecation warning naming New.
type RenamedKey struct {
	// Old is the key's former name, e.g. "index.prefix".
	Old string
	// New is the key that replaced it, e.g. "index.key-prefix".
	New string
}

// renamedKeys is the one table of renamed keys, applied to every layer (the file, the
// environment, the flags). docs/configuration.md lists it ("Renamed keys").
var renamedKeys = []RenamedKey{
	// One spelling of a key prefix in every block: key-prefix.
	{"index.prefix", "index.key-prefix"},
	{"feed.prefix", "feed.key-prefix"},
	{"executor.persistence.redis.namespace", "executor.persistence.redis.key-prefix"},
	// One breaker section shape: the feed's breaker sits under resilience, like the
	// build-status registry's.
	{"feed.breaker.failure-rate-threshold", "feed.resilience.failure-rate-threshold"},
	{"feed.breaker.wait-duration-in-open-state", "feed.resilience.wait-duration-in-open-state"},
	{"feed.breaker.sliding-window-size", "feed.resilience.sliding-window-size"},
	{"feed.breaker.probe-interval", "feed.resilience.probe-interval"},
}

// RenamedKeys returns the table of renamed keys, sorted by old name.
func RenamedKeys() []RenamedKey {
	out := append([]RenamedKey(nil), renamedKeys...)
	sort.Slice(out, func(i, j int) bool { return out[i].Old < out[j].Old })
	return out
}

// Deprecation is one renamed key that a configuration layer still gave by its old name.
type Deprecation struct {
	// Old is the key as given, e.g. "index.prefix".
	Old string
	// New is the key it set, e.g. "index.key-prefix".
	New string
	// Source is where Old was given: `config file redstate.yaml`, `environment
	// REDSTATE_INDEX_PREFIX` or `flag --name`.
	Source string
}

// String describes d for people: "index.prefix (config file x.yaml) is deprecated: use
// index.key-prefix".
func (d Deprecation) String() string {
	return fmt.Sprintf("%s (%s) is deprecated: use %s", d.Old, d.Source, d.New)
}

// renameInFile moves every old key of raw (a parsed, normalized YAML document) to its new
// key, returning a Deprecation for each (from source) and an error naming both keys for each
// old key whose new key is also set to a different value. A section left empty by the moves
// (feed.breaker) is dropped.
func renameInFile(raw map[string]any, source string) ([]Deprecation, []error) {
	var deps []Deprecation
	var problems []error
	for _, r := range RenamedKeys() {
		oldPath := strings.Split(r.Old, ".")
		parent, ok := nested(raw, oldPath[:len(oldPath)-1]...)
		if !ok {
			continue
		}
		v, present := parent[oldPath[len(oldPath)-1]]
		if !present {
			continue
		}
		delete(parent, oldPath[len(oldPath)-1])
		pruneEmpty(raw, oldPath[:len(oldPath)-1])
		deps = append(deps, Deprecation{Old: r.Old, New: r.New, Source: source})
		newPath := strings.Split(r.New, ".")
		if target, ok := nested(raw, newPath[:len(newPath)-1]...); ok {
			if cur, set := target[newPath[len(newPath)-1]]; set {
				if !sameValue(cur, v) {
					problems = append(problems, bothSetError(r, v, cur))
				}
				continue
			}
		}
		if err := setPath(raw, newPath, v, ""); err != nil {
			problems = append(problems, fmt.Errorf("%s (renamed to %s): %w", r.Old, r.New, err))
		}
	}
	return deps, problems
}

// pruneEmpty removes the mapping at path below m when it is empty, then each parent left
// empty by that.
func pruneEmpty(m map[string]any, path []string) {
	for n := len(path); n > 0; n-- {
		parent, ok := nested(m, path[:n-1]...)
		if !ok {
			return
		}
		sub, ok := parent[path[n-1]].(map[string]any)
		if !ok || len(sub) > 0 {
			return
		}
		delete(parent, path[n-1])
	}
}

// renamedFrom returns the old key renamed to key, if any.
func renamedFrom(key string) (RenamedKey, bool) {
	for _, r := range renamedKeys {
		if r.New == key {
			return r, true
		}
	}
	return RenamedKey{}, false
}

// bothSetError is the error of an old key and its new key set to different values.
func bothSetError(r RenamedKey, oldValue, newValue any) error {
	return fmt.Errorf("%s and %s are both set, to different values (%v and %v): %s is the old name of %s, keep only %s",
		r.Old, r.New, oldValue, newValue, r.Old, r.New, r.New)
}
