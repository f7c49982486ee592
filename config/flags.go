package config

import (
	"fmt"
	"strings"

	"github.com/knadh/koanf/v2"
	"github.com/spf13/pflag"
)

// FlagConfig is the name of the flag that selects the YAML configuration file. It is not a
// configuration key; the caller reads it and passes it to Load as path.
const FlagConfig = "config"

// flagBinding ties a command-line flag to the configuration key it sets.
type flagBinding struct {
	Flag  string
	Key   string
	Usage string
}

// flagBindings lists every flag BindFlags defines, besides --config.
var flagBindings = []flagBinding{
	{"redis", "redis.url", "standalone Redis URL: redis://[user:pass@]host:port[/db] or rediss:// for TLS"},
	{"redis-cluster", "redis.cluster-addrs", "Redis Cluster seed addresses, comma separated (host:port,host:port)"},
	{"redis-sentinel-master", "redis.sentinel.master-name", "name of the Sentinel-monitored master"},
	{"redis-sentinel", "redis.sentinel.addrs", "Sentinel addresses, comma separated (host:port,host:port)"},
	{"addr", "server.addr", "HTTP listen address (host:port; port 0 picks a free port)"},
	{"insecure", "server.insecure", "allow a non-loopback --addr without auth tokens (anyone who can reach it can write)"},
	{"namespace", "namespace", "prefix of every Redis key, e.g. prod-"},
	{"data-dir", "data-dir", "directory of embedded state (the SQLite database), created on start"},
	{"database", "database.url", "SQL database: sqlite:<path> or postgres://user:pw@host:5432/db (default: SQLite in --data-dir)"},
	{"log-level", "log.level", "log level: debug, info, warn or error"},
	{"log-format", "log.format", "log format: json or text"},
	{"policy", "publish.build-status.resilience.policy", "what the build-status registry does while Redis is down: fail-fast or fallback"},
	{"ttl", "publish.build-status.ttl", "build retention as a duration (e.g. 1h, 30d); overrides publish.build-status.ttl-days"},
}

// FlagForKey returns the flag that sets a configuration key, or "" when there is none.
func FlagForKey(key string) string {
	for _, b := range flagBindings {
		if b.Key == key {
			return b.Flag
		}
	}
	return ""
}

// BindFlags defines redstate's configuration flags on fs: --config plus one flag per
// frequently changed key (see docs/configuration.md). Defaults shown in help are Default()'s;
// Load applies a flag only when it was set explicitly, so a flag never hides a value from the
// file or the environment by its default.
func BindFlags(fs *pflag.FlagSet) {
	d := Default()
	fs.String(FlagConfig, "", "YAML configuration file (env "+EnvPrefix+"CONFIG)")
	for _, b := range flagBindings {
		usage := fmt.Sprintf("%s (key %s, env %s)", b.Usage, b.Key, EnvName(b.Key))
		switch b.Key {
		case "redis.cluster-addrs", "redis.sentinel.addrs":
			fs.StringSlice(b.Flag, nil, usage)
		case "server.insecure":
			fs.Bool(b.Flag, d.Server.Insecure, usage)
		case "publish.build-status.ttl":
			fs.Duration(b.Flag, d.Publish.BuildStatus.TTL, usage)
		case "server.addr":
			fs.String(b.Flag, d.Server.Addr, usage)
		case "log.level":
			fs.String(b.Flag, d.Log.Level, usage)
		case "log.format":
			fs.String(b.Flag, d.Log.Format, usage)
		case "publish.build-status.resilience.policy":
			fs.String(b.Flag, d.Publish.BuildStatus.Resilience.Policy, usage)
		case "data-dir":
			fs.String(b.Flag, d.DataDir, usage)
		default:
			fs.String(b.Flag, "", usage)
		}
	}
}

// applyFlags sets the key of every bound flag that was explicitly set on the command line.
func applyFlags(k *koanf.Koanf, fs *pflag.FlagSet) error {
	for _, b := range flagBindings {
		f := fs.Lookup(b.Flag)
		if f == nil || !f.Changed {
			continue
		}
		var v any
		switch f.Value.Type() {
		case "stringSlice":
			list, err := fs.GetStringSlice(b.Flag)
			if err != nil {
				return fmt.Errorf("flag --%s: %w", b.Flag, err)
			}
			items := []any{}
			for _, s := range list {
				if s = strings.TrimSpace(s); s != "" {
					items = append(items, s)
				}
			}
			v = items
		default:
			// The decoder parses strings into the key's type (bool, duration) exactly as it
			// does for environment values.
			v = f.Value.String()
		}
		if err := k.Set(b.Key, v); err != nil {
			return fmt.Errorf("flag --%s: %w", b.Flag, err)
		}
	}
	return nil
}

// ConfigPath returns the configuration file named by --config on fs, else by the environment
// variable REDSTATE_CONFIG (looked up with lookupEnv), else "".
func ConfigPath(fs *pflag.FlagSet, lookupEnv func(string) (string, bool)) string {
	if fs != nil {
		if f := fs.Lookup(FlagConfig); f != nil && f.Changed {
			return f.Value.String()
		}
	}
	if lookupEnv != nil {
		if v, ok := lookupEnv(EnvPrefix + "CONFIG"); ok {
			return v
		}
	}
	return ""
}
