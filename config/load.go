package config

import (
	_ "embed" // the demo layer
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/knadh/koanf/maps"
	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/v2"
	"github.com/spf13/pflag"

	"github.com/redstate/redstate/internal/suggest"
	"github.com/redstate/redstate/queue"
)

// Load returns the effective configuration: Default(), overridden by the YAML file at path (when
// path is not ""), overridden by REDSTATE_* environment variables, overridden by the flags of
// flags (BindFlags) that were explicitly set on the command line. flags may be nil.
//
// A key in the file that redstate does not know is an error naming it, so a typo never passes
// silently. Load does not validate the result: call Validate.
func Load(path string, flags *pflag.FlagSet) (Config, error) {
	return load(path, flags, os.LookupEnv)
}

func load(path string, flags *pflag.FlagSet, lookupEnv func(string) (string, bool)) (Config, error) {
	var file map[string]any
	var deps []Deprecation
	if path != "" {
		var err error
		if file, deps, err = readFile(path); err != nil {
			return Config{}, err
		}
	}
	env, envDeps, err := readEnv(lookupEnv)
	if err != nil {
		return Config{}, err
	}
	deps = append(deps, envDeps...)
	k, err := layers(nil, file, path, env, flags)
	if err != nil {
		return Config{}, err
	}
	if k.Bool("demo") {
		demo, err := demoLayer()
		if err != nil {
			return Config{}, err
		}
		if k, err = layers(demo, file, path, env, flags); err != nil {
			return Config{}, err
		}
	}

	cfg := Default()
	dc := &mapstructure.DecoderConfig{
		DecodeHook:       mapstructure.ComposeDecodeHookFunc(durationHook, stringToListHook),
		WeaklyTypedInput: true,
		ErrorUnused:      true,
		TagName:          "koanf",
	}
	if err := k.UnmarshalWithConf("", &cfg, koanf.UnmarshalConf{DecoderConfig: dc}); err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	cfg.Deprecations = deps
	return cfg, nil
}

// layers merges the configuration layers, each over the one before: base (the demo layer, or
// nil), the file read from path, the environment, then the flags explicitly set.
func layers(base, file map[string]any, path string, env map[string]any, flags *pflag.FlagSet) (*koanf.Koanf, error) {
	k := koanf.New(".")
	if base != nil {
		if err := k.Load(mapProvider(base), nil); err != nil {
			return nil, fmt.Errorf("demo layer: %w", err)
		}
	}
	if file != nil {
		if err := k.Load(mapProvider(file), nil); err != nil {
			return nil, fmt.Errorf("config file %s: %w", path, err)
		}
	}
	if err := k.Load(mapProvider(env), nil); err != nil {
		return nil, fmt.Errorf("environment: %w", err)
	}
	if flags != nil {
		if err := applyFlags(k, flags); err != nil {
			return nil, err
		}
	}
	return k, nil
}

// demoYAML is the demo layer (see Config.Demo).
//
//go:embed demo.yaml
var demoYAML []byte

// demoLayer parses demoYAML as a configuration file; it gives every key by its current name.
func demoLayer() (map[string]any, error) {
	raw, deps, err := parseYAML(demoYAML, "the demo layer")
	if err == nil && len(deps) > 0 {
		err = fmt.Errorf("the demo layer: %s", deps[0])
	}
	return raw, err
}

// readFile parses the YAML file at path and rejects keys that are not configuration keys. It
// returns the renamed keys the file gives by their old names.
func readFile(path string) (map[string]any, []Deprecation, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("config file: %w", err)
	}
	return parseYAML(b, "config file "+path)
}

// parseYAML parses the configuration file b (named by what in errors and deprecations),
// normalizes it (renamed keys under their new names) and rejects keys that are not
// configuration keys.
func parseYAML(b []byte, what string) (map[string]any, []Deprecation, error) {
	raw, err := yaml.Parser().Unmarshal(b)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", what, err)
	}
	if raw == nil {
		raw = map[string]any{}
	}
	raw, deps, err := normalize(raw, what)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", what, err)
	}
	if problems := keyProblems(raw, reflect.TypeOf(Config{}), ""); len(problems) > 0 {
		msgs := make([]string, len(problems))
		for i, p := range problems {
			msgs[i] = p.Error()
		}
		return nil, nil, fmt.Errorf("%s: %w", what, &ValidationError{Problems: msgs})
	}
	return raw, deps, nil
}

// checkKeys returns every problem with the keys of raw, in sorted key order: keys that are not
// fields of t (each with the nearest known key) and values of the wrong shape. It recurses into
// mappings and lists of mappings, so one pass reports all of them.
func checkKeys(raw map[string]any, t reflect.Type, prefix string) error {
	return errors.Join(keyProblems(raw, t, prefix)...)
}

// keyProblems is checkKeys' list.
func keyProblems(raw map[string]any, t reflect.Type, prefix string) []error {
	var problems []error
	fields := structFields(t)
	names := make([]string, 0, len(raw))
	for name := range raw {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		full := joinKey(prefix, name)
		ft, ok := fields[name]
		if !ok {
			problems = append(problems, unknownKeyError(full))
			continue
		}
		v := raw[name]
		if v == nil {
			continue
		}
		switch {
		case ft.Kind() == reflect.Struct && ft != durationType:
			sub, ok := v.(map[string]any)
			if !ok {
				problems = append(problems, fmt.Errorf("key %q must be a mapping of keys, got %T", full, v))
				continue
			}
			problems = append(problems, keyProblems(sub, ft, full)...)
		case ft.Kind() == reflect.Slice && ft.Elem() == tokenType:
			list, ok := v.([]any)
			if !ok {
				problems = append(problems, fmt.Errorf("key %q must be a list of {name, token, roles}, got %T", full, v))
				continue
			}
			for i, item := range list {
				m, ok := item.(map[string]any)
				if !ok {
					problems = append(problems, fmt.Errorf("key %s[%d] must be a mapping {name, token, roles}, got %T", full, i, item))
					continue
				}
				problems = append(problems, keyProblems(m, tokenType, fmt.Sprintf("%s[%d]", full, i))...)
			}
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			list, ok := v.([]any)
			if !ok {
				problems = append(problems, fmt.Errorf("key %q must be a list of mappings, got %T", full, v))
				continue
			}
			for i, item := range list {
				m, ok := item.(map[string]any)
				if !ok {
					problems = append(problems, fmt.Errorf("key %s[%d] must be a mapping, got %T", full, i, item))
					continue
				}
				problems = append(problems, keyProblems(m, ft.Elem(), fmt.Sprintf("%s[%d]", full, i))...)
			}
		}
	}
	return problems
}

func joinKey(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// unknownKeyError names the unknown key and, when one is close, the key that was probably meant.
func unknownKeyError(key string) error {
	if best := suggest.Closest(stripIndex(key), knownKeysAndSections(), 3); best != "" {
		return fmt.Errorf("unknown key %q (did you mean %q?)", key, best)
	}
	return fmt.Errorf("unknown key %q (see docs/configuration.md for the keys)", key)
}

// knownKeysAndSections lists every configuration key and every section above one
// ("server", "executor.persistence"), the candidates for an unknown key's suggestion.
func knownKeysAndSections() []string {
	keys := append(Keys(), append([]string{"auth.tokens[].name", "auth.tokens[].token", "auth.tokens[].roles"}, queueSpecKeys()...)...)
	seen := make(map[string]bool, len(keys))
	out := make([]string, 0, 2*len(keys))
	for _, k := range keys {
		for i := range len(k) {
			if k[i] == '.' && !seen[k[:i]] {
				seen[k[:i]] = true
				out = append(out, k[:i])
			}
		}
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// stripIndex turns "auth.tokens[3].nme" into "auth.tokens[].nme" for suggestions.
func stripIndex(key string) string {
	var b strings.Builder
	skip := false
	for _, r := range key {
		switch {
		case r == '[':
			skip = true
			b.WriteRune(r)
		case r == ']':
			skip = false
			b.WriteRune(r)
		case !skip:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// readEnv returns the configuration set by REDSTATE_* variables as a nested map. The variable of
// each known key is looked up (never the reverse), so '_' vs '-' in names is never ambiguous;
// so is the variable of a renamed key's old name, which sets the key with a Deprecation.
func readEnv(lookupEnv func(string) (string, bool)) (map[string]any, []Deprecation, error) {
	list, _ := knownKeys()
	flat := map[string]any{}
	var deps []Deprecation
	for _, key := range list {
		v, ok := lookupEnv(key.Env)
		if r, renamed := renamedFrom(key.Key); renamed {
			oldEnv := EnvName(r.Old)
			if old, set := lookupEnv(oldEnv); set {
				deps = append(deps, Deprecation{Old: r.Old, New: r.New, Source: "environment " + oldEnv})
				if ok && !sameValue(old, v) {
					return nil, nil, fmt.Errorf("environment %s and %s: %w", oldEnv, key.Env, bothSetError(r, old, v))
				}
				v, ok = old, true
			}
		}
		if !ok {
			continue
		}
		switch key.Kind {
		case kindList:
			flat[key.Key] = splitList(v)
		case kindTokens:
			tokens, err := ParseTokens(v)
			if err != nil {
				return nil, nil, fmt.Errorf("environment %s: %w", key.Env, err)
			}
			items := make([]any, len(tokens))
			for i, t := range tokens {
				roles := make([]any, len(t.Roles))
				for j, r := range t.Roles {
					roles[j] = r
				}
				items[i] = map[string]any{"name": t.Name, "token": t.Token, "roles": roles}
			}
			flat[key.Key] = items
		case kindStructs:
			list, err := parseStructList(v)
			if err != nil {
				return nil, nil, fmt.Errorf("environment %s: %w", key.Env, err)
			}
			for i, item := range list {
				m, ok := item.(map[string]any)
				if !ok {
					return nil, nil, fmt.Errorf("environment %s: item %d must be a mapping, got %T", key.Env, i, item)
				}
				if err := checkKeys(m, key.Type.Elem(), fmt.Sprintf("%s[%d]", key.Key, i)); err != nil {
					return nil, nil, fmt.Errorf("environment %s: %w", key.Env, err)
				}
			}
			flat[key.Key] = list
		default:
			if slices.Contains(secondsKeys, key.Key) && isDigits(v) {
				v += "s" // the executor design's snippets write these TTLs as integer seconds
			}
			flat[key.Key] = v
		}
	}
	return maps.Unflatten(flat, "."), deps, nil
}

// parseStructList parses the environment form of a list of mappings (queue.queues): a YAML
// flow (or JSON) list such as '[{name: report:queue, concurrency: 4}]'.
func parseStructList(s string) ([]any, error) {
	doc, err := yaml.Parser().Unmarshal([]byte("list: " + s))
	if err != nil {
		return nil, fmt.Errorf("must be a YAML or JSON list of mappings, e.g. '[{name: report:queue, concurrency: 4}]': %w", err)
	}
	list, ok := doc["list"].([]any)
	if !ok {
		return nil, fmt.Errorf("must be a YAML or JSON list of mappings, e.g. '[{name: report:queue, concurrency: 4}]'")
	}
	return list, nil
}

// queueSpecKeys returns the keys of a queue.queues element ("queue.queues[].name", ...), for
// suggestions.
func queueSpecKeys() []string {
	var out []string
	for _, k := range collectKeys(reflect.TypeOf(queue.Spec{}), "queue.queues[]") {
		out = append(out, k.Key)
	}
	return out
}

// splitList splits a comma-separated list, trimming spaces and dropping empty items.
func splitList(s string) []any {
	out := []any{}
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// ParseTokens parses the environment form of auth.tokens: comma-separated entries
// "name:token:role+role". The name is up to the first ':', the roles after the last ':', the
// token is everything between (so it may itself contain ':', but not ',').
//
// Example: REDSTATE_AUTH_TOKENS="ci:s3cret:write,dash:r3ad:read".
func ParseTokens(s string) ([]Token, error) {
	var out []Token
	for i, entry := range strings.Split(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		first, last := strings.Index(entry, ":"), strings.LastIndex(entry, ":")
		if first < 0 || first == last {
			return nil, fmt.Errorf("token entry %d must look like name:token:role+role (got %d ':'-separated parts)", i+1, strings.Count(entry, ":")+1)
		}
		t := Token{Name: entry[:first], Token: entry[first+1 : last]}
		for _, role := range strings.Split(entry[last+1:], "+") {
			if role = strings.TrimSpace(role); role != "" {
				t.Roles = append(t.Roles, role)
			}
		}
		out = append(out, t)
	}
	return out, nil
}

// durationHook decodes durations from Go duration strings ("10s", "1h30m") plus whole days
// ("30d"). A bare number other than 0 is rejected: "10" would silently mean 10 nanoseconds.
func durationHook(from, to reflect.Type, data any) (any, error) {
	if to != durationType {
		return data, nil
	}
	switch v := data.(type) {
	case string:
		return parseDuration(v)
	case time.Duration:
		return v, nil
	case int, int64, uint64, float64:
		if reflect.ValueOf(v).IsZero() {
			return time.Duration(0), nil
		}
		return nil, fmt.Errorf("duration %v has no unit: write e.g. \"10s\", \"5m\" or \"30d\"", v)
	}
	return data, nil
}

func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err == nil {
			return time.Duration(n) * 24 * time.Hour, nil
		}
	}
	if s == "" || s == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration: write e.g. \"10s\", \"5m\" or \"30d\"", s)
	}
	return d, nil
}

// stringToListHook splits a comma-separated string destined for a []string.
func stringToListHook(from, to reflect.Type, data any) (any, error) {
	if from.Kind() != reflect.String || to.Kind() != reflect.Slice || to.Elem().Kind() != reflect.String {
		return data, nil
	}
	return splitList(data.(string)), nil
}

// mapProvider is a koanf.Provider of an already parsed nested map.
type mapProvider map[string]any

// Read implements koanf.Provider.
func (m mapProvider) Read() (map[string]any, error) { return maps.Copy(m), nil }

// ReadBytes implements koanf.Provider; it is not supported.
func (m mapProvider) ReadBytes() ([]byte, error) {
	return nil, errors.New("mapProvider does not support ReadBytes")
}

// isDigits reports whether s is a non-empty run of ASCII digits.
func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}
