package config

import (
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"
)

// keyKind is how a leaf key's value is written in the environment and on the command line.
type keyKind int

const (
	kindScalar  keyKind = iota // string, number, bool, duration
	kindList                   // []string: comma separated in the environment
	kindTokens                 // []Token: "name:token:role+role,..." in the environment
	kindStructs                // []struct (queue.queues): a YAML/JSON flow list in the environment
)

// keyInfo describes one leaf configuration key.
type keyInfo struct {
	// Key is the dotted koanf path, e.g. "publish.build-status.ttl-days".
	Key string
	// Env is the environment variable that sets it, e.g. "REDSTATE_PUBLISH_BUILD_STATUS_TTL_DAYS".
	Env string
	// Kind selects how an environment value is parsed.
	Kind keyKind
	// Type is the Go type of the field.
	Type reflect.Type
}

// EnvPrefix starts every environment variable redstate reads.
const EnvPrefix = "REDSTATE_"

var (
	durationType = reflect.TypeOf(time.Duration(0))
	tokenType    = reflect.TypeOf(Token{})

	keysOnce sync.Once
	keyList  []keyInfo
	keyIndex map[string]keyInfo
)

// knownKeys returns every leaf key of Config, enumerated from the koanf struct tags, sorted by key.
func knownKeys() ([]keyInfo, map[string]keyInfo) {
	keysOnce.Do(func() {
		keyList = collectKeys(reflect.TypeOf(Config{}), "")
		sort.Slice(keyList, func(i, j int) bool { return keyList[i].Key < keyList[j].Key })
		keyIndex = make(map[string]keyInfo, len(keyList))
		for _, k := range keyList {
			keyIndex[k.Key] = k
		}
	})
	return keyList, keyIndex
}

// Keys returns every configuration key ("redis.url", "publish.build-status.ttl-days", ...),
// sorted.
func Keys() []string {
	list, _ := knownKeys()
	out := make([]string, len(list))
	for i, k := range list {
		out[i] = k.Key
	}
	return out
}

// EnvName returns the environment variable of a configuration key: EnvPrefix followed by the
// key uppercased with '.' and '-' replaced by '_' ("redis.url" → "REDSTATE_REDIS_URL").
func EnvName(key string) string {
	return EnvPrefix + strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(key))
}

func collectKeys(t reflect.Type, prefix string) []keyInfo {
	var out []keyInfo
	for _, f := range koanfFields(t) {
		key := f.Name
		if prefix != "" {
			key = prefix + "." + f.Name
		}
		switch {
		case f.Type.Kind() == reflect.Struct && f.Type != durationType:
			out = append(out, collectKeys(f.Type, key)...)
		case f.Type.Kind() == reflect.Slice && f.Type.Elem() == tokenType:
			out = append(out, keyInfo{Key: key, Env: EnvName(key), Kind: kindTokens, Type: f.Type})
		case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct:
			out = append(out, keyInfo{Key: key, Env: EnvName(key), Kind: kindStructs, Type: f.Type})
		case f.Type.Kind() == reflect.Slice:
			out = append(out, keyInfo{Key: key, Env: EnvName(key), Kind: kindList, Type: f.Type})
		default:
			out = append(out, keyInfo{Key: key, Env: EnvName(key), Kind: kindScalar, Type: f.Type})
		}
	}
	return out
}

// structFields returns the koanf tags of a struct type's fields (see koanfFields).
func structFields(t reflect.Type) map[string]reflect.Type {
	fields := koanfFields(t)
	out := make(map[string]reflect.Type, len(fields))
	for _, f := range fields {
		out[f.Name] = f.Type
	}
	return out
}

// koanfFields returns the configuration fields of a struct type in struct order, each with its
// koanf tag as Name and its index path as Index. The fields of an embedded struct tagged
// `koanf:",squash"` (resilience.Options' BreakerConfig) are the section's own keys, as the
// decoder reads them.
func koanfFields(t reflect.Type) []reflect.StructField {
	var out []reflect.StructField
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("koanf")
		if tag == "" || tag == "-" || !f.IsExported() {
			continue
		}
		if name, opts, _ := strings.Cut(tag, ","); name == "" && opts == "squash" && f.Anonymous && f.Type.Kind() == reflect.Struct {
			for _, sub := range koanfFields(f.Type) {
				sub.Index = append([]int{i}, sub.Index...)
				out = append(out, sub)
			}
			continue
		}
		f.Name = tag
		out = append(out, f)
	}
	return out
}
