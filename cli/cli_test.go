package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate/config"
)

func serverCfg(addr string, insecure bool) config.Server {
	s := config.Default().Server
	s.Addr, s.Insecure = addr, insecure
	return s
}

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	root := NewRootCommand()
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(io.Discard)
	err := root.Execute()
	return out.String(), err
}

func TestConfigPrint_RedactsAndReflectsSources(t *testing.T) {
	t.Setenv("REDSTATE_REDIS_PASSWORD", "hunter2")
	t.Setenv("REDSTATE_AUTH_TOKENS", "ci:t0ps3cret:write")
	out, err := run(t, "config", "print", "--redis", "redis://app:urlsecret@127.0.0.1:6379/1", "--namespace", "prod-")
	if err != nil {
		t.Fatalf("config print: %v\n%s", err, out)
	}
	for _, secret := range []string{"hunter2", "t0ps3cret", "urlsecret"} {
		if strings.Contains(out, secret) {
			t.Errorf("output leaks %q:\n%s", secret, out)
		}
	}
	for _, want := range []string{"namespace: prod-", "url: redis://app:***@127.0.0.1:6379/1", "password: '***'", "name: ci"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestConfigPrint_ReportsInvalidConfig(t *testing.T) {
	out, err := run(t, "config", "print", "--log-level", "loud")
	if err == nil || !strings.Contains(err.Error(), `log.level: "loud" is not one of`) {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(out, "level: loud") {
		t.Errorf("config still printed? output:\n%s", out)
	}
}

func TestServe_InvalidConfigIsAnError(t *testing.T) {
	_, err := run(t, "serve", "--policy", "maybe")
	if err == nil || !strings.Contains(err.Error(), "publish.build-status.resilience.policy") {
		t.Fatalf("err = %v", err)
	}
}

func TestVersion(t *testing.T) {
	out, err := run(t, "version")
	if err != nil || !strings.HasPrefix(out, "redstate ") || !strings.Contains(out, runtime.Version()) {
		t.Fatalf("version = %q, %v", out, err)
	}
	out, err = run(t, "version", "--json")
	var info map[string]any
	if err != nil || json.Unmarshal([]byte(out), &info) != nil {
		t.Fatalf("version --json = %q, %v", out, err)
	}
	for _, k := range []string{"version", "revision", "dirty", "buildTime", "goVersion", "platform"} {
		if _, ok := info[k]; !ok {
			t.Errorf("version --json lacks %s: %s", k, out)
		}
	}
}

func TestRoot_ListsSubcommands(t *testing.T) {
	names := map[string]bool{}
	for _, c := range NewRootCommand().Commands() {
		names[c.Name()] = true
	}
	for _, want := range []string{"serve", "config", "version", "builds", "queue", "executor", "index", "feed"} {
		if !names[want] {
			t.Errorf("subcommand %q missing", want)
		}
	}
	if names["bench"] {
		t.Error("the server binary has a bench command: benchmarks are redstate-bench's")
	}
}

func TestRedisLogs_GoToTheServeLogger(t *testing.T) {
	var buf bytes.Buffer
	redisLogTarget.Store(slog.New(slog.NewJSONHandler(&buf, nil)))
	t.Cleanup(func() { redisLogTarget.Store(nil) })
	// A message of its own: the same message logged again within redisLogRepeat (by an earlier
	// run of this test under -count) is suppressed.
	refused := fmt.Sprintf("connection refused (%d)", time.Now().UnixNano())
	redisLogs{}.Printf(context.Background(), "pool: dial failed: %s\n", refused)
	if out := buf.String(); !strings.Contains(out, `"component":"go-redis"`) || !strings.Contains(out, refused) || !strings.Contains(out, `"level":"WARN"`) {
		t.Fatalf("go-redis log line = %s", out)
	}
}

// TestConfigPrint_OutputFedBackRefusesRedactionMarker: docs call `config print` output a valid
// config file; fed back, its "***" must not become a working token or password.
func TestConfigPrint_OutputFedBackRefusesRedactionMarker(t *testing.T) {
	t.Setenv("REDSTATE_REDIS_PASSWORD", "hunter2")
	t.Setenv("REDSTATE_AUTH_TOKENS", "ci:t0ps3cret-0123456789:write")
	out, err := run(t, "config", "print", "--redis", "redis://app:urlsecret@127.0.0.1:6379/1")
	if err != nil {
		t.Fatalf("config print: %v", err)
	}
	_ = os.Unsetenv("REDSTATE_REDIS_PASSWORD") // t.Setenv restores them after the test
	_ = os.Unsetenv("REDSTATE_AUTH_TOKENS")
	path := filepath.Join(t.TempDir(), "printed.yaml")
	if err := os.WriteFile(path, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = run(t, "config", "print", "--config", path)
	if err == nil {
		t.Fatal("a printed config with redacted secrets was accepted")
	}
	for _, key := range []string{"auth.tokens[0].token", "redis.password", "redis.url (password)"} {
		if !strings.Contains(err.Error(), key+`: is "***"`) {
			t.Errorf("error does not name %s:\n%v", key, err)
		}
	}
}

// TestConfigPrint_SpellsOutQueueDefaults: config print shows the effective queue settings, so
// prefetch is its concurrency (the documented default), never null.
func TestConfigPrint_SpellsOutQueueDefaults(t *testing.T) {
	cfg := writeConfig(t, "queue:\n  queues:\n    - name: a\n      concurrency: 4\n    - name: b\n      handler: external\n      prefetch: 0\n")
	out, err := run(t, "config", "print", "--config", cfg)
	if err != nil {
		t.Fatalf("config print: %v\n%s", err, out)
	}
	if regexp.MustCompile(`(?m):\s*null$`).MatchString(out) || !strings.Contains(out, "prefetch: 4") || !strings.Contains(out, "prefetch: 0") {
		t.Errorf("queue defaults not spelled out:\n%s", out)
	}
}

// TestConfigPrint_RenamedKeys: a file with renamed keys under their old names prints with the
// new names, and each old name is logged once as a deprecation naming the new key.
func TestConfigPrint_RenamedKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.yaml")
	old := "index:\n  prefix: old_index\nfeed:\n  breaker:\n    probe-interval: 500ms\n"
	if err := os.WriteFile(path, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("REDSTATE_FEED_PREFIX", "oldfeed:")
	var out, errOut bytes.Buffer
	root := NewRootCommand()
	root.SetArgs([]string{"config", "print", "--config", path, "--log-format", "json"})
	root.SetOut(&out)
	root.SetErr(&errOut)
	if err := root.Execute(); err != nil {
		t.Fatalf("config print: %v\n%s", err, errOut.String())
	}
	printed := out.String()
	for _, want := range []string{"key-prefix: old_index", "key-prefix: 'oldfeed:'", "probe-interval: 500ms"} {
		if !strings.Contains(printed, want) {
			t.Errorf("output lacks %q:\n%s", want, printed)
		}
	}
	if old := regexp.MustCompile(`(?m)^\s+(prefix|breaker):`).FindString(printed); old != "" {
		t.Errorf("output still has the old name %q:\n%s", old, printed)
	}
	var warnings []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(errOut.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec["msg"] == "deprecated configuration key" {
			warnings = append(warnings, rec)
		}
	}
	want := map[string]string{"index.prefix": "index.key-prefix", "feed.breaker.probe-interval": "feed.resilience.probe-interval",
		"feed.prefix": "feed.key-prefix"}
	if len(warnings) != len(want) {
		t.Fatalf("warnings = %v, want one for each of %v", warnings, want)
	}
	for _, w := range warnings {
		if w["level"] != "WARN" || want[w["old"].(string)] != w["new"] {
			t.Errorf("warning %v", w)
		}
	}
}
