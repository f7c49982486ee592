package deploy

import (
	"bufio"
	"bytes"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/redstate/redstate/config"
)

// composeFile is the subset of the Compose specification the kit uses.
type composeFile struct {
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
}

type composeService struct {
	Image       string                       `yaml:"image"`
	Command     []string                     `yaml:"command"`
	Environment map[string]string            `yaml:"environment"`
	Volumes     []string                     `yaml:"volumes"`
	Profiles    []string                     `yaml:"profiles"`
	DependsOn   map[string]composeDependency `yaml:"depends_on"`
	Healthcheck struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
	ReadOnly        bool   `yaml:"read_only"`
	StopGracePeriod string `yaml:"stop_grace_period"`
}

type composeDependency struct {
	Condition string `yaml:"condition"`
	Required  *bool  `yaml:"required"`
}

// composeVar is a variable reference of the Compose interpolation syntax: $$ (a literal $),
// ${NAME}, ${NAME:-default}, ${NAME-default}, ${NAME:?error}, ${NAME?error} or $NAME.
var composeVar = regexp.MustCompile(`\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)`)

// interpolate resolves the variable references of s with env as Compose does; a ${NAME:?msg}
// whose variable is unset or empty is an error carrying msg.
func interpolate(s string, env map[string]string) (string, error) {
	var problems []string
	out := composeVar.ReplaceAllStringFunc(s, func(ref string) string {
		if ref == "$$" {
			return "$"
		}
		m := composeVar.FindStringSubmatch(ref)
		name, op, arg := m[1], m[2], m[3]
		if name == "" {
			name = m[4]
		}
		value, set := env[name]
		empty := !set || (strings.HasPrefix(op, ":") && value == "")
		switch {
		case op == ":-" || op == "-":
			if empty {
				return arg
			}
		case op == ":?" || op == "?":
			if empty {
				problems = append(problems, name+": "+arg)
			}
		}
		return value
	})
	if len(problems) > 0 {
		return "", fmt.Errorf("required variables: %s", strings.Join(problems, "; "))
	}
	return out, nil
}

// loadCompose parses deploy/compose.yaml with every variable reference resolved from env.
func loadCompose(t *testing.T, env map[string]string) (composeFile, error) {
	t.Helper()
	var raw any
	if err := yaml.Unmarshal(readFile(t, "deploy/compose.yaml"), &raw); err != nil {
		t.Fatalf("compose.yaml is not YAML: %v", err)
	}
	resolved, err := interpolateTree(raw, env)
	if err != nil {
		return composeFile{}, err
	}
	b, err := yaml.Marshal(resolved)
	if err != nil {
		t.Fatal(err)
	}
	var f composeFile
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	return f, nil
}

// interpolateTree resolves the variables of every string of a parsed YAML document.
func interpolateTree(v any, env map[string]string) (any, error) {
	switch v := v.(type) {
	case string:
		return interpolate(v, env)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			r, err := interpolateTree(e, env)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			r, err := interpolateTree(e, env)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	}
	return v, nil
}

// composeEnvExample reads deploy/compose.env.example: the assignments of the default setup
// (uncommented lines) and, per profile, the commented assignments of its "--profile NAME"
// section.
func composeEnvExample(t *testing.T) (base map[string]string, profiles map[string]map[string]string) {
	t.Helper()
	base, profiles = map[string]string{}, map[string]map[string]string{}
	profileHeader := regexp.MustCompile(`^#\s*--profile (\w+)`)
	commented := regexp.MustCompile(`^#\s*([A-Z][A-Z0-9_]*)=(.*)$`)
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(readFile(t, "deploy/compose.env.example")))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if m := profileHeader.FindStringSubmatch(line); m != nil {
			section = m[1]
			profiles[section] = map[string]string{}
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			base[k] = v
			continue
		}
		if m := commented.FindStringSubmatch(line); m != nil && section != "" {
			profiles[section][m[1]] = m[2]
		}
	}
	return base, profiles
}

// TestCompose_Services: Redis persists with AOF and never evicts, redstate waits for a healthy
// Redis (and for the SQL service of an active profile), every service has a health check, the
// SQL servers are behind their profiles and every volume a service mounts is declared.
func TestCompose_Services(t *testing.T) {
	base, _ := composeEnvExample(t)
	f, err := loadCompose(t, base)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"redis", "redstate", "mariadb", "postgres"} {
		s, ok := f.Services[name]
		if !ok {
			t.Fatalf("no service %q", name)
		}
		if len(s.Healthcheck.Test) < 2 {
			t.Errorf("service %s has no health check", name)
		}
		for _, v := range s.Volumes {
			if vol, _, _ := strings.Cut(v, ":"); !strings.HasPrefix(vol, ".") && !strings.HasPrefix(vol, "/") {
				if _, ok := f.Volumes[vol]; !ok {
					t.Errorf("service %s mounts volume %q, not declared under volumes", name, vol)
				}
			}
		}
	}
	redis := strings.Join(f.Services["redis"].Command, " ")
	for _, want := range []string{"--appendonly yes", "--appendfsync everysec", "--requirepass " + base["REDIS_PASSWORD"], "--maxmemory-policy noeviction"} {
		if !strings.Contains(redis, want) {
			t.Errorf("redis command %q lacks %q", redis, want)
		}
	}
	if !slices.Contains(f.Services["redis"].Volumes, "redis-data:/data") {
		t.Errorf("redis keeps its AOF outside a volume: %v", f.Services["redis"].Volumes)
	}
	rs := f.Services["redstate"]
	if len(rs.Profiles) != 0 || len(f.Services["redis"].Profiles) != 0 {
		t.Errorf("redis and redstate must start without a profile: %v %v", f.Services["redis"].Profiles, rs.Profiles)
	}
	if d := rs.DependsOn["redis"]; d.Condition != "service_healthy" || d.Required != nil && !*d.Required {
		t.Errorf("redstate must wait for a healthy Redis: %+v", d)
	}
	for _, sqlService := range []string{"mariadb", "postgres"} {
		if p := f.Services[sqlService].Profiles; !slices.Equal(p, []string{sqlService}) {
			t.Errorf("%s profiles = %v, want [%s]", sqlService, p, sqlService)
		}
		d := rs.DependsOn[sqlService]
		if d.Condition != "service_healthy" || d.Required == nil || *d.Required {
			t.Errorf("redstate must wait for %s when its profile is active and start without it otherwise: %+v", sqlService, d)
		}
	}
	if !rs.ReadOnly || rs.StopGracePeriod == "" {
		t.Errorf("redstate: read_only %v, stop_grace_period %q", rs.ReadOnly, rs.StopGracePeriod)
	}
}

// TestCompose_RedstateEnvironmentIsAValidConfiguration: in the default setup and each profile
// of compose.env.example, every REDSTATE_* variable of the redstate service names a
// configuration key, the configuration they make loads and validates, its listen port is the
// one the health check and the published port use, its data directory is the mounted volume
// and its database URL reaches the profile's service with that service's credentials.
func TestCompose_RedstateEnvironmentIsAValidConfiguration(t *testing.T) {
	envOfKey := map[string]bool{}
	for _, k := range config.Keys() {
		envOfKey[config.EnvName(k)] = true
	}
	base, profiles := composeEnvExample(t)
	if len(profiles) != 2 || profiles["mariadb"] == nil || profiles["postgres"] == nil {
		t.Fatalf("compose.env.example profiles = %v, want mariadb and postgres sections", profiles)
	}
	setups := map[string]map[string]string{"sqlite": base}
	for name, vars := range profiles {
		env := maps.Clone(base)
		for k, v := range vars {
			env[k] = v
		}
		setups[name] = env
	}
	for setup, env := range setups {
		t.Run(setup, func(t *testing.T) {
			f, err := loadCompose(t, env)
			if err != nil {
				t.Fatal(err)
			}
			rs := f.Services["redstate"]
			clearRedstateEnv(t)
			for k, v := range rs.Environment {
				if !envOfKey[k] {
					t.Errorf("redstate environment %s is not a configuration key's variable", k)
				}
				t.Setenv(k, v)
			}
			cfg, err := config.Load("", nil)
			if err != nil {
				t.Fatalf("config.Load: %v", err)
			}
			if err := cfg.Validate(); err != nil {
				t.Fatalf("configuration of the redstate service is invalid: %v", err)
			}
			_, port, err := net.SplitHostPort(cfg.Server.Addr)
			if err != nil {
				t.Fatal(err)
			}
			health := strings.Join(rs.Healthcheck.Test, " ")
			if want := "health --url http://127.0.0.1:" + port + "/readyz"; !strings.Contains(health, want) {
				t.Errorf("health check %q does not check %q", health, want)
			}
			if !slices.ContainsFunc(rs.Volumes, func(v string) bool { return strings.HasSuffix(v, ":"+cfg.DataDir) }) {
				t.Errorf("data-dir %q is not a mounted volume: %v", cfg.DataDir, rs.Volumes)
			}
			if !strings.Contains(cfg.Redis.URL, "@redis:6379") {
				t.Errorf("redis.url %q does not name the redis service", cfg.Redis.URL)
			}
			checkDatabaseURL(t, setup, cfg.Database.URL, f)
		})
	}
}

// checkDatabaseURL checks that a profile's database URL reaches its service with the user,
// password and database the service is created with (no URL: SQLite in the data directory).
func checkDatabaseURL(t *testing.T, setup, dbURL string, f composeFile) {
	t.Helper()
	if setup == "sqlite" {
		if dbURL != "" {
			t.Errorf("default setup: database.url %q, want empty (SQLite in the data directory)", dbURL)
		}
		return
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatalf("database.url: %v", err)
	}
	env := f.Services[setup].Environment
	var user, db string
	var password string
	switch setup {
	case "mariadb":
		user, password, db = env["MARIADB_USER"], env["MARIADB_PASSWORD"], env["MARIADB_DATABASE"]
	case "postgres":
		user, password, db = env["POSTGRES_USER"], env["POSTGRES_PASSWORD"], env["POSTGRES_DB"]
	}
	pw, _ := u.User.Password()
	if u.Hostname() != setup || u.User.Username() != user || pw != password || strings.TrimPrefix(u.Path, "/") != db || password == "" {
		t.Errorf("%s: database.url %q does not match the service (user %q, password %q, database %q)", setup, dbURL, user, password, db)
	}
}

// TestCompose_RequiredSecrets: without REDIS_PASSWORD or REDSTATE_AUTH_TOKENS the file does not
// resolve (Compose stops with the message), so no deployment starts without them.
func TestCompose_RequiredSecrets(t *testing.T) {
	base, _ := composeEnvExample(t)
	for _, missing := range []string{"REDIS_PASSWORD", "REDSTATE_AUTH_TOKENS"} {
		env := maps.Clone(base)
		delete(env, missing)
		if _, err := loadCompose(t, env); err == nil || !strings.Contains(err.Error(), missing) {
			t.Errorf("without %s: %v, want an error naming it", missing, err)
		}
	}
}

// TestCompose_HealthCheckRunsTheImageBinary: the redstate health check runs the binary the
// image's ENTRYPOINT runs (the image has no shell), for every image recipe in the repository.
func TestCompose_HealthCheckRunsTheImageBinary(t *testing.T) {
	base, _ := composeEnvExample(t)
	f, err := loadCompose(t, base)
	if err != nil {
		t.Fatal(err)
	}
	test := f.Services["redstate"].Healthcheck.Test
	if len(test) < 3 || test[0] != "CMD" || !filepath.IsAbs(test[1]) || test[2] != "health" {
		t.Fatalf("health check %v: want [CMD /path/to/redstate health ...] (exec form: no shell in the image)", test)
	}
	entrypoint := regexp.MustCompile(`(?m)^ENTRYPOINT\s+\[\s*"([^"]+)"`)
	var recipes []string
	for _, pattern := range []string{"Dockerfile*", "Containerfile*", "deploy/*/Dockerfile*", "deploy/*/Containerfile*", "deploy/Dockerfile*", "deploy/Containerfile*"} {
		m, _ := filepath.Glob(filepath.Join(repoRoot(t), pattern))
		recipes = append(recipes, m...)
	}
	for _, r := range recipes {
		b, err := os.ReadFile(r)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range entrypoint.FindAllStringSubmatch(string(b), -1) {
			if m[1] != test[1] {
				t.Errorf("%s: ENTRYPOINT runs %s, the compose health check %s", r, m[1], test[1])
			}
		}
	}
	t.Logf("image recipes checked: %v", recipes)
}

// clearRedstateEnv unsets every REDSTATE_* variable of the test process for the test, so that
// only the compose file's environment makes the configuration.
func clearRedstateEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, config.EnvPrefix) {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
}
