package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/knadh/koanf/v2"
	"github.com/spf13/pflag"
)

// FlagConfig is the name of the flag that selects the YAML configuration file. It is not a
// configuration key; the caller reads it and passes it to Load as path.
const FlagConfig = "config"

// FlagGroup names a set of configuration flags that commands bind together, so that each
// command shows only the flags it uses (BindFlags).
type FlagGroup string

// The flag groups. Every flag of flagBindings belongs to exactly one.
const (
	// FlagsRedis: the Redis connection (--redis, --redis-cluster, --redis-sentinel-master,
	// --redis-sentinel).
	FlagsRedis FlagGroup = "redis"
	// FlagsNamespace: --namespace, the prefix of every Redis key (commands that read or write
	// the blocks' keys).
	FlagsNamespace FlagGroup = "namespace"
	// FlagsServer: the HTTP listener (--addr, --insecure).
	FlagsServer FlagGroup = "server"
	// FlagsData: embedded state and the SQL database (--data-dir, --database).
	FlagsData FlagGroup = "data"
	// FlagsLog: --log-level, --log-format.
	FlagsLog FlagGroup = "log"
	// FlagsBuildStatus: the build-status registry's --policy and --ttl.
	FlagsBuildStatus FlagGroup = "build-status"
)

// AllFlagGroups lists every flag group, in the order BindFlags defines them.
var AllFlagGroups = []FlagGroup{FlagsRedis, FlagsNamespace, FlagsServer, FlagsData, FlagsLog, FlagsBuildStatus}

// flagBinding ties a command-line flag to the configuration key it sets.
type flagBinding struct {
	Flag  string
	Key   string
	Usage string
	Group FlagGroup
}

// flagBindings lists every flag BindFlags defines, besides --config.
var flagBindings = []flagBinding{
	{"redis", "redis.url", "standalone Redis URL: redis://[user:pass@]host:port[/db] or rediss:// for TLS", FlagsRedis},
	{"redis-cluster", "redis.cluster-addrs", "Redis Cluster seed addresses, comma separated (host:port,host:port)", FlagsRedis},
	{"redis-sentinel-master", "redis.sentinel.master-name", "name of the Sentinel-monitored master", FlagsRedis},
	{"redis-sentinel", "redis.sentinel.addrs", "Sentinel addresses, comma separated (host:port,host:port)", FlagsRedis},
	{"addr", "server.addr", "HTTP listen address (host:port; port 0 picks a free port)", FlagsServer},
	{"insecure", "server.insecure", "allow a non-loopback --addr without auth tokens (anyone who can reach it can write)", FlagsServer},
	{"demo", "demo", "run the README's examples as they are: an example index table, the built-in stage handler \"steps\", a 30 s report generator", FlagsServer},
	{"namespace", "namespace", "prefix of every Redis key, e.g. prod-", FlagsNamespace},
	{"data-dir", "data-dir", "directory of embedded state (the SQLite database), created on start", FlagsData},
	{"database", "database.url", "SQL database: sqlite:<path>, postgres://user:pw@host:5432/db or mysql://user:pw@host:3306/db (default: SQLite in --data-dir)", FlagsData},
	{"log-level", "log.level", "log level: debug, info, warn or error", FlagsLog},
	{"log-format", "log.format", "log format: json or text", FlagsLog},
	{"policy", "publish.build-status.resilience.policy", "what the build-status registry does while Redis is down: fail-fast or fallback", FlagsBuildStatus},
	{"ttl", "publish.build-status.ttl", "build retention as a duration (e.g. 1h, 30d); overrides publish.build-status.ttl-days", FlagsBuildStatus},
}

// GroupFlags returns the names of the flags of group (without --config), in definition order.
func GroupFlags(group FlagGroup) []string {
	var names []string
	for _, b := range flagBindings {
		if b.Group == group {
			names = append(names, b.Flag)
		}
	}
	return names
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

// BindFlags defines redstate's configuration flags on fs: --config plus the flags of the
// given groups, one per frequently changed key (see docs/configuration.md); with no group, the
// flags of every group. Defaults shown in help are Default()'s; Load applies a flag only when
// it was set explicitly, so a flag never hides a value from the file or the environment by its
// default. Keys without a flag on a command still come from the file and the environment.
func BindFlags(fs *pflag.FlagSet, groups ...FlagGroup) {
	if len(groups) == 0 {
		groups = AllFlagGroups
	}
	d := Default()
	fs.String(FlagConfig, "", "YAML configuration file (env "+EnvPrefix+"CONFIG)")
	for _, b := range flagBindings {
		if !slices.Contains(groups, b.Group) {
			continue
		}
		usage := fmt.Sprintf("%s (key %s, env %s)", b.Usage, b.Key, EnvName(b.Key))
		switch b.Key {
		case "redis.cluster-addrs", "redis.sentinel.addrs":
			fs.StringSlice(b.Flag, nil, usage)
		case "server.insecure":
			fs.Bool(b.Flag, d.Server.Insecure, usage)
		case "demo":
			fs.Bool(b.Flag, d.Demo, usage)
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
