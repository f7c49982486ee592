package config

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// The seed's own configuration snippets (the executor design's snippets of its persistence and degradation settings) and Spring-style YAML
// write keys in forms that nested YAML alone does not cover; normalize rewrites them into
// the canonical nested form before the keys are checked:
//
//   - dotted keys at any level: `executor.persistence.redis.key-prefix: prod-executor` is
//     `executor: {persistence: {redis: {key-prefix: prod-executor}}}` (mixable with nested
//     keys; the same key set twice with different values is an error);
//   - bare integers as seconds for the executor TTLs (`ttl.checkpoint: 604800`, as in 6.3);
//   - the 7.4 aliases under executor.persistence: `namespace`, `projection-ttl`, `lock-ttl`
//     for `redis.key-prefix`, `redis.ttl.projection`, `redis.ttl.lock` (an alias and its key
//     with different values is an error).

// secondsKeys are the keys whose bare integers are seconds (the design's persistence snippet).
var secondsKeys = []string{
	"executor.persistence.redis.ttl.checkpoint",
	"executor.persistence.redis.ttl.projection",
	"executor.persistence.redis.ttl.lock",
}

// executorAliases maps the design's degradation-snippet keys under executor.persistence to
// the persistence keys they mean.
var executorAliases = map[string]string{
	"namespace":      "redis.key-prefix",
	"projection-ttl": "redis.ttl.projection",
	"lock-ttl":       "redis.ttl.lock",
}

// normalize rewrites raw (a parsed YAML document, named by source in deprecations) into the
// canonical nested form, renamed keys under their new names (renameInFile), reporting every
// conflict at once. It returns the renamed keys raw gave by their old names.
func normalize(raw map[string]any, source string) (map[string]any, []Deprecation, error) {
	var problems []error
	out := expandDotted(raw, "", &problems)
	deps, renameProblems := renameInFile(out, source)
	problems = append(problems, renameProblems...)
	if p, ok := nested(out, "executor", "persistence"); ok {
		names := make([]string, 0, len(executorAliases))
		for alias := range executorAliases {
			names = append(names, alias)
		}
		sort.Strings(names)
		for _, alias := range names {
			v, present := p[alias]
			if !present {
				continue
			}
			target := executorAliases[alias]
			delete(p, alias)
			if err := setPath(p, strings.Split(target, "."), v, "executor.persistence."); err != nil {
				problems = append(problems, fmt.Errorf("executor.persistence.%s (seed 7.4 form) and executor.persistence.%s: %w", alias, target, err))
			}
		}
	}
	for _, key := range secondsKeys {
		path := strings.Split(key, ".")
		parent, ok := nested(out, path[:len(path)-1]...)
		if !ok {
			continue
		}
		switch v := parent[path[len(path)-1]].(type) {
		case int:
			parent[path[len(path)-1]] = strconv.Itoa(v) + "s"
		case int64:
			parent[path[len(path)-1]] = strconv.FormatInt(v, 10) + "s"
		case uint64:
			parent[path[len(path)-1]] = strconv.FormatUint(v, 10) + "s"
		}
	}
	return out, deps, errors.Join(problems...)
}

// expandDotted returns a copy of m with every dotted key expanded into nested maps.
func expandDotted(m map[string]any, prefix string, problems *[]error) map[string]any {
	out := make(map[string]any, len(m))
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys) // deterministic conflict messages
	for _, k := range keys {
		v := m[k]
		if sub, ok := v.(map[string]any); ok {
			v = expandDotted(sub, prefix+k+".", problems)
		}
		if err := setPath(out, strings.Split(k, "."), v, prefix); err != nil {
			*problems = append(*problems, err)
		}
	}
	return out
}

// setPath sets path (below m) to v, merging maps; a different value already there is an error
// naming the key.
func setPath(m map[string]any, path []string, v any, prefix string) error {
	for i, seg := range path[:len(path)-1] {
		next, exists := m[seg]
		if !exists {
			sub := map[string]any{}
			m[seg] = sub
			m = sub
			continue
		}
		sub, ok := next.(map[string]any)
		if !ok {
			return fmt.Errorf("key %q is given both as a value and as a section", prefix+strings.Join(path[:i+1], "."))
		}
		m = sub
	}
	last := path[len(path)-1]
	old, exists := m[last]
	if !exists {
		m[last] = v
		return nil
	}
	oldMap, oldIsMap := old.(map[string]any)
	newMap, newIsMap := v.(map[string]any)
	if oldIsMap && newIsMap {
		for k, sv := range newMap {
			if err := setPath(oldMap, []string{k}, sv, prefix+strings.Join(path, ".")+"."); err != nil {
				return err
			}
		}
		return nil
	}
	if sameValue(old, v) {
		return nil
	}
	return fmt.Errorf("key %q is set twice with different values (%v and %v)", prefix+strings.Join(path, "."), old, v)
}

// sameValue compares two YAML values, durations by their meaning ("7d" equals "168h").
func sameValue(a, b any) bool {
	if reflect.DeepEqual(a, b) {
		return true
	}
	as, bs := fmt.Sprint(a), fmt.Sprint(b)
	if as == bs {
		return true
	}
	da, errA := parseSecondsOrDuration(a)
	db, errB := parseSecondsOrDuration(b)
	return errA == nil && errB == nil && da == db
}

// parseSecondsOrDuration reads a duration string or a bare integer (seconds).
func parseSecondsOrDuration(v any) (int64, error) {
	switch x := v.(type) {
	case int:
		return int64(x) * 1e9, nil
	case int64:
		return x * 1e9, nil
	case string:
		d, err := parseDuration(x)
		return int64(d), err
	}
	return 0, fmt.Errorf("not a duration")
}

// nested returns the map at path below m.
func nested(m map[string]any, path ...string) (map[string]any, bool) {
	for _, seg := range path {
		sub, ok := m[seg].(map[string]any)
		if !ok {
			return nil, false
		}
		m = sub
	}
	return m, true
}
