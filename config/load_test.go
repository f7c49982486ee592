package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/redstate/redstate/internal/resilience"
	"github.com/redstate/redstate/queue"
)

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "redstate.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func flagsOf(t *testing.T, args ...string) *pflag.FlagSet {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return fs
}

func TestLoad_DefaultsWithoutSources(t *testing.T) {
	cfg, err := load("", flagsOf(t), envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg, Default()) {
		t.Fatalf("got %+v, want Default()", cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Default() does not validate: %v", err)
	}
}

func TestLoad_SeedYAML(t *testing.T) {
	path := writeFile(t, "publish:\n  build-status:\n    ttl-days: 30\n")
	cfg, err := load(path, nil, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Publish.BuildStatus.EffectiveTTL(); got != 30*24*time.Hour {
		t.Fatalf("TTL = %s, want 720h", got)
	}
	// Untouched siblings keep their defaults.
	if cfg.Publish.BuildStatus.KeyPrefix != "ingenio:publish:" || cfg.Publish.BuildStatus.Resilience != resilience.DefaultOptions() {
		t.Fatalf("defaults lost: %+v", cfg.Publish.BuildStatus)
	}
}

func TestLoad_PrecedenceFileEnvFlags(t *testing.T) {
	path := writeFile(t, `
namespace: file-
server:
  addr: 127.0.0.1:1111
log:
  level: debug
  format: text
publish:
  build-status:
    ttl-days: 7
    resilience:
      policy: fallback
`)
	env := envOf(map[string]string{
		"REDSTATE_SERVER_ADDR":                            "127.0.0.1:2222",
		"REDSTATE_LOG_LEVEL":                              "warn",
		"REDSTATE_PUBLISH_BUILD_STATUS_TTL_DAYS":          "14",
		"REDSTATE_PUBLISH_BUILD_STATUS_RESILIENCE_POLICY": "fail-fast",
	})
	fs := flagsOf(t, "--addr", "127.0.0.1:3333", "--policy", "fallback")
	cfg, err := load(path, fs, env)
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct{ name, got, want string }{
		{"namespace (file only)", cfg.Namespace, "file-"},
		{"log.format (file only)", cfg.Log.Format, "text"},
		{"log.level (env over file)", cfg.Log.Level, "warn"},
		{"server.addr (flag over env over file)", cfg.Server.Addr, "127.0.0.1:3333"},
		{"policy (flag over env over file)", cfg.Publish.BuildStatus.Resilience.Policy, "fallback"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
	if cfg.Publish.BuildStatus.TTLDays != 14 {
		t.Errorf("ttl-days (env over file) = %d, want 14", cfg.Publish.BuildStatus.TTLDays)
	}
}

func TestLoad_UnsetFlagsDoNotOverride(t *testing.T) {
	// --addr has a default of 127.0.0.1:8080 in help; not setting it must keep the env value.
	cfg, err := load("", flagsOf(t), envOf(map[string]string{"REDSTATE_SERVER_ADDR": "127.0.0.1:9999"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.Addr != "127.0.0.1:9999" {
		t.Fatalf("addr = %q", cfg.Server.Addr)
	}
}

func TestLoad_UnknownYAMLKeyIsAnError(t *testing.T) {
	cases := []struct{ yaml, want string }{
		{"publish:\n  build-status:\n    ttl-day: 30\n", `unknown key "publish.build-status.ttl-day" (did you mean "publish.build-status.ttl-days"?)`},
		{"redis:\n  ulr: redis://x:6379\n", `unknown key "redis.ulr" (did you mean "redis.url"?)`},
		{"auth:\n  tokens:\n    - name: a\n      tokn: b\n", `unknown key "auth.tokens[0].tokn" (did you mean "auth.tokens[].token"?)`},
		{"zzzzzzzzzz: 1\n", `unknown key "zzzzzzzzzz"`},
		{"redis: redis://x:6379\n", `key "redis" must be a mapping`},
	}
	for _, c := range cases {
		_, err := load(writeFile(t, c.yaml), nil, envOf(nil))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("yaml %q: err = %v, want it to contain %s", c.yaml, err, c.want)
		}
	}
}

func TestLoad_EnvLists(t *testing.T) {
	cfg, err := load("", nil, envOf(map[string]string{
		"REDSTATE_REDIS_CLUSTER_ADDRS":  "127.0.0.1:7000, 127.0.0.1:7001,,127.0.0.1:7002",
		"REDSTATE_REDIS_SENTINEL_ADDRS": "127.0.0.1:26379",
		"REDSTATE_AUTH_TOKENS":          "ci:s3:cr:et:write+read, dash:r3ad:read",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"127.0.0.1:7000", "127.0.0.1:7001", "127.0.0.1:7002"}; !reflect.DeepEqual(cfg.Redis.ClusterAddrs, want) {
		t.Errorf("cluster addrs = %q, want %q", cfg.Redis.ClusterAddrs, want)
	}
	if want := []string{"127.0.0.1:26379"}; !reflect.DeepEqual(cfg.Redis.Sentinel.Addrs, want) {
		t.Errorf("sentinel addrs = %q, want %q", cfg.Redis.Sentinel.Addrs, want)
	}
	want := []Token{{Name: "ci", Token: "s3:cr:et", Roles: []string{"write", "read"}}, {Name: "dash", Token: "r3ad", Roles: []string{"read"}}}
	if !reflect.DeepEqual(cfg.Auth.Tokens, want) {
		t.Errorf("tokens = %+v, want %+v", cfg.Auth.Tokens, want)
	}
}

func TestLoad_EnvReplacesFileList(t *testing.T) {
	path := writeFile(t, "redis:\n  cluster-addrs: [a:1, b:2, c:3]\n")
	cfg, err := load(path, nil, envOf(map[string]string{"REDSTATE_REDIS_CLUSTER_ADDRS": "d:4"}))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg.Redis.ClusterAddrs, []string{"d:4"}) {
		t.Fatalf("cluster addrs = %q", cfg.Redis.ClusterAddrs)
	}
}

func TestLoad_BadTokensEnv(t *testing.T) {
	_, err := load("", nil, envOf(map[string]string{"REDSTATE_AUTH_TOKENS": "justatoken"}))
	if err == nil || !strings.Contains(err.Error(), "REDSTATE_AUTH_TOKENS") || !strings.Contains(err.Error(), "name:token:role+role") {
		t.Fatalf("err = %v", err)
	}
}

func TestLoad_FlagsOfEveryKind(t *testing.T) {
	fs := flagsOf(t,
		"--redis-sentinel-master", "mymaster", "--redis-sentinel", "127.0.0.1:1,127.0.0.1:2",
		"--insecure", "--ttl", "90m", "--namespace", "ns-", "--log-format", "text", "--log-level", "debug",
	)
	cfg, err := load("", fs, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Redis.Sentinel.MasterName != "mymaster" || !reflect.DeepEqual(cfg.Redis.Sentinel.Addrs, []string{"127.0.0.1:1", "127.0.0.1:2"}) {
		t.Errorf("sentinel = %+v", cfg.Redis.Sentinel)
	}
	if !cfg.Server.Insecure || cfg.Publish.BuildStatus.TTL != 90*time.Minute || cfg.Namespace != "ns-" ||
		cfg.Log.Format != "text" || cfg.Log.Level != "debug" {
		t.Errorf("cfg = %+v", cfg)
	}
	fs = flagsOf(t, "--redis", "redis://127.0.0.1:6379", "--redis-cluster", "127.0.0.1:7000")
	cfg, err = load("", fs, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Redis.URL != "redis://127.0.0.1:6379" || !reflect.DeepEqual(cfg.Redis.ClusterAddrs, []string{"127.0.0.1:7000"}) {
		t.Errorf("redis = %+v", cfg.Redis)
	}
}

func TestLoad_Durations(t *testing.T) {
	path := writeFile(t, "server:\n  shutdown-timeout: 3s\npublish:\n  build-status:\n    ttl: 2d\n")
	cfg, err := load(path, nil, envOf(map[string]string{"REDSTATE_REDIS_DIAL_TIMEOUT": "250ms"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.ShutdownTimeout != 3*time.Second || cfg.Publish.BuildStatus.TTL != 48*time.Hour || cfg.Redis.DialTimeout != 250*time.Millisecond {
		t.Fatalf("cfg = %+v", cfg)
	}
	_, err = load(writeFile(t, "server:\n  shutdown-timeout: 10\n"), nil, envOf(nil))
	if err == nil || !strings.Contains(err.Error(), "no unit") {
		t.Fatalf("bare number duration: err = %v", err)
	}
	_, err = load("", nil, envOf(map[string]string{"REDSTATE_REDIS_READ_TIMEOUT": "soon"}))
	if err == nil || !strings.Contains(err.Error(), "not a duration") {
		t.Fatalf("bad env duration: err = %v", err)
	}
}

func TestLoad_Durability(t *testing.T) {
	if d := Default().Redis.Durability; d.WaitReplicas != 0 || d.WaitTimeout != 100*time.Millisecond {
		t.Fatalf("default durability = %+v, want off with 100ms", d)
	}
	path := writeFile(t, "redis:\n  url: redis://127.0.0.1:6379\n  durability:\n    wait-replicas: 2\n")
	cfg, err := load(path, nil, envOf(map[string]string{"REDSTATE_REDIS_DURABILITY_WAIT_TIMEOUT": "250ms"}))
	if err != nil {
		t.Fatal(err)
	}
	if d := cfg.Redis.Durability; d.WaitReplicas != 2 || d.WaitTimeout != 250*time.Millisecond {
		t.Fatalf("durability = %+v", d)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestLoad_MissingFile(t *testing.T) {
	_, err := load(filepath.Join(t.TempDir(), "nope.yaml"), nil, envOf(nil))
	if err == nil || !strings.Contains(err.Error(), "nope.yaml") {
		t.Fatalf("err = %v", err)
	}
}

func TestEnvNames_AreUniqueAndDerivedFromKeys(t *testing.T) {
	seen := map[string]string{EnvPrefix + "CONFIG": "--config"}
	for _, k := range Keys() {
		env := EnvName(k)
		if other, dup := seen[env]; dup {
			t.Errorf("%s and %s both map to %s", k, other, env)
		}
		seen[env] = k
	}
	for key, want := range map[string]string{
		"redis.url":                     "REDSTATE_REDIS_URL",
		"publish.build-status.ttl-days": "REDSTATE_PUBLISH_BUILD_STATUS_TTL_DAYS",
		"namespace":                     "REDSTATE_NAMESPACE",
	} {
		if got := EnvName(key); got != want {
			t.Errorf("EnvName(%q) = %q, want %q", key, got, want)
		}
	}
	if _, ok := seen["REDSTATE_AUTH_TOKENS"]; !ok {
		t.Error("auth.tokens has no environment variable")
	}
}

func TestFlagBindings_NameRealKeys(t *testing.T) {
	_, index := knownKeys()
	for _, b := range flagBindings {
		if _, ok := index[b.Key]; !ok {
			t.Errorf("flag --%s binds unknown key %q", b.Flag, b.Key)
		}
	}
}

func TestConfigPath(t *testing.T) {
	if got := ConfigPath(flagsOf(t, "--config", "a.yaml"), envOf(map[string]string{"REDSTATE_CONFIG": "b.yaml"})); got != "a.yaml" {
		t.Errorf("flag: got %q", got)
	}
	if got := ConfigPath(flagsOf(t), envOf(map[string]string{"REDSTATE_CONFIG": "b.yaml"})); got != "b.yaml" {
		t.Errorf("env: got %q", got)
	}
}

func TestYAML_RoundTripsThroughLoad(t *testing.T) {
	cfg := Default()
	cfg.Namespace = "prod-"
	cfg.Redis.ClusterAddrs = []string{"127.0.0.1:7000", "127.0.0.1:7001"}
	cfg.Auth.Tokens = []Token{{Name: "ci", Token: "s", Roles: []string{"write"}}}
	cfg.Publish.BuildStatus.TTL = 90 * time.Minute
	b, err := cfg.YAML()
	if err != nil {
		t.Fatal(err)
	}
	got, err := load(writeFile(t, string(b)), nil, envOf(nil))
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	cfg.Redis.Sentinel.Addrs = []string{}       // printed as [], read back as an empty list
	cfg.Queue.Periodic = []queue.PeriodicSpec{} // likewise
	cfg.Queue.Pools = []queue.PoolSpec{}        // likewise
	if !reflect.DeepEqual(got, cfg) {
		t.Fatalf("round trip:\n got %+v\nwant %+v\nyaml:\n%s", got, cfg, b)
	}
}

func TestLoad_ReportsEveryUnknownKeyAtOnce(t *testing.T) {
	path := writeFile(t, "servr:\n  addr: x\nlog:\n  levl: info\n  formt: json\nqueue:\n  queues:\n    - name: q\n      concurency: 2\n")
	_, err := load(path, nil, envOf(nil))
	if err == nil {
		t.Fatal("unknown keys accepted")
	}
	for _, want := range []string{`unknown key "servr" (did you mean "server`, `unknown key "log.levl" (did you mean "log.level"?)`,
		`unknown key "log.formt" (did you mean "log.format"?)`, `unknown key "queue.queues[0].concurency"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestLoad_SeedExecutorForms(t *testing.T) {
	// Seed 6.3: integer seconds; 7.4: aliases and "7d"; Spring style: dotted keys, mixed.
	path := writeFile(t, `
executor:
  persistence:
    redis:
      ttl:
        checkpoint: 604800
        projection: 2592000
    store-type: redis
    lock-ttl: 2h30m
executor.persistence.namespace: prod-executor
`)
	cfg, err := load(path, nil, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Executor.Persistence
	if p.Redis.TTL.Checkpoint != 7*24*time.Hour || p.Redis.TTL.Projection != 30*24*time.Hour || p.Redis.TTL.Lock != 9000*time.Second ||
		p.Redis.KeyPrefix != "prod-executor" || p.StoreType != "redis" {
		t.Fatalf("persistence = %+v", p)
	}
	cfg, err = load(writeFile(t, "executor:\n  persistence:\n    projection-ttl: 7d\n"), nil, envOf(map[string]string{
		"REDSTATE_EXECUTOR_PERSISTENCE_REDIS_TTL_LOCK": "9000",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Executor.Persistence.Redis.TTL.Projection != 7*24*time.Hour || cfg.Executor.Persistence.Redis.TTL.Lock != 9000*time.Second {
		t.Fatalf("7d alias / env seconds: %+v", cfg.Executor.Persistence.Redis.TTL)
	}
	// Both forms agreeing is fine; disagreeing is an error naming both keys.
	if _, err := load(writeFile(t, "executor:\n  persistence:\n    lock-ttl: 2h30m\n    redis:\n      ttl:\n        lock: 9000\n"), nil, envOf(nil)); err != nil {
		t.Fatalf("agreeing forms: %v", err)
	}
	_, err = load(writeFile(t, "executor:\n  persistence:\n    namespace: a\n    redis:\n      namespace: b\n"), nil, envOf(nil))
	if err == nil || !strings.Contains(err.Error(), "executor.persistence.namespace (seed 7.4 form)") {
		t.Fatalf("conflicting forms: %v", err)
	}
	_, err = load(writeFile(t, "log.level: debug\nlog:\n  level: info\n"), nil, envOf(nil))
	if err == nil || !strings.Contains(err.Error(), `"log.level" is set twice`) {
		t.Fatalf("dotted and nested disagreeing: %v", err)
	}
	cfg, err = load(writeFile(t, "log.level: debug\nserver:\n  max-body-bytes: 2048\nserver.addr: 127.0.0.1:9999\n"), nil, envOf(nil))
	if err != nil || cfg.Log.Level != "debug" || cfg.Server.Addr != "127.0.0.1:9999" || cfg.Server.MaxBodyBytes != 2048 {
		t.Fatalf("dotted keys at the top level: %+v %v", cfg.Server, err)
	}
}
