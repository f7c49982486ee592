package deploy

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/redstate/redstate/config"
)

// chartDir is the Helm chart, relative to the repository's top directory.
const chartDir = "deploy/helm/redstate"

// testTokens is an auth.tokens value in its environment form for configurations that listen
// off loopback.
const testTokens = "admin:0123456789abcdef0123456789abcdef:admin,prometheus:fedcba9876543210fedcba9876543210:read"

// loadConfigFile runs the configuration loader on content as serve's --config file, with env
// as the only REDSTATE_* variables, and validates the result.
func loadConfigFile(t *testing.T, content []byte, env map[string]string) config.Config {
	t.Helper()
	path := filepath.Join(t.TempDir(), "redstate.yaml")
	if err := os.WriteFile(path, content, 0o600); err != nil {
		t.Fatal(err)
	}
	clearRedstateEnv(t)
	for k, v := range env {
		t.Setenv(k, v)
	}
	cfg, err := config.Load(path, nil)
	if err != nil {
		t.Fatalf("config.Load of\n%s\n: %v", content, err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("configuration\n%s\nis invalid: %v", content, err)
	}
	return cfg
}

// TestHelmValues_ConfigIsAValidConfiguration checks the chart without helm (the rendering
// checks run under make deploy-check): the default `config` block, as the ConfigMap carries
// it, is a configuration serve accepts with the tokens of the chart's Secret; the image tag
// follows appVersion; the probes are /readyz and /healthz.
func TestHelmValues_ConfigIsAValidConfiguration(t *testing.T) {
	var chart struct {
		AppVersion string `yaml:"appVersion"`
		Version    string `yaml:"version"`
	}
	if err := yaml.Unmarshal(readFile(t, chartDir+"/Chart.yaml"), &chart); err != nil {
		t.Fatal(err)
	}
	semver := regexp.MustCompile(`^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`)
	if !semver.MatchString(chart.Version) || !semver.MatchString(chart.AppVersion) {
		t.Errorf("Chart.yaml version %q appVersion %q: want semantic versions", chart.Version, chart.AppVersion)
	}
	var values struct {
		Config map[string]any `yaml:"config"`
		Image  struct {
			Repository string `yaml:"repository"`
			Tag        string `yaml:"tag"`
		} `yaml:"image"`
		Probes struct {
			Readiness struct{ Path string } `yaml:"readiness"`
			Liveness  struct{ Path string } `yaml:"liveness"`
		} `yaml:"probes"`
	}
	if err := yaml.Unmarshal(readFile(t, chartDir+"/values.yaml"), &values); err != nil {
		t.Fatal(err)
	}
	if values.Image.Repository != "localhost/redstate" || values.Image.Tag != "" {
		t.Errorf("image %s:%s, want localhost/redstate with the tag left to appVersion", values.Image.Repository, values.Image.Tag)
	}
	if values.Probes.Readiness.Path != "/readyz" || values.Probes.Liveness.Path != "/healthz" {
		t.Errorf("probes readiness %q liveness %q", values.Probes.Readiness.Path, values.Probes.Liveness.Path)
	}
	content, err := yaml.Marshal(values.Config)
	if err != nil {
		t.Fatal(err)
	}
	cfg := loadConfigFile(t, content, map[string]string{"REDSTATE_AUTH_TOKENS": testTokens})
	if cfg.DataDir != "/data" || cfg.Server.Addr != "0.0.0.0:8080" || !cfg.Redis.Configured() {
		t.Errorf("default config: data-dir %q addr %q redis %v", cfg.DataDir, cfg.Server.Addr, cfg.Redis.Configured())
	}
}
