//go:build deploycheck

package deploy

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/redstate/redstate/config"
)

// helmModule is the helm command these checks run, built from its Go module: a tool, never a
// dependency of the server's module.
const (
	helmModule  = "helm.sh/helm/v3/cmd/helm"
	helmVersion = "v3.22.0"
)

// helmBinary returns $REDSTATE_HELM, or helm built once (go install, minutes the first time)
// into the user's cache directory.
func helmBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("REDSTATE_HELM"); p != "" {
		return p
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(cache, "redstate-tools", "helm-"+helmVersion)
	bin := filepath.Join(dir, "helm")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	cmd := exec.Command("go", "install", helmModule+"@"+helmVersion)
	// Outside this module: go install pkg@version builds the tool with its own go.mod.
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOWORK=off", "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building helm %s: %v\n%s", helmVersion, err, out)
	}
	return bin
}

// helm runs the helm binary with args in the repository's top directory.
func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(helmBinary(t), args...)
	cmd.Dir = repoRoot(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), errors.New(err.Error() + ": " + stderr.String())
	}
	return string(out), nil
}

// manifest is one rendered Kubernetes object.
type manifest map[string]any

func (m manifest) kind() string { s, _ := m["kind"].(string); return s }

// get walks m along path (map keys, or list indexes given as ints).
func (m manifest) get(path ...any) any {
	var v any = map[string]any(m)
	for _, p := range path {
		switch p := p.(type) {
		case string:
			mm, ok := asMap(v)
			if !ok {
				return nil
			}
			v = mm[p]
		case int:
			l, ok := v.([]any)
			if !ok || p >= len(l) {
				return nil
			}
			v = l[p]
		}
	}
	return v
}

// asMap returns v as a map: yaml.v3 decodes the maps inside a manifest as manifests.
func asMap(v any) (manifest, bool) {
	switch v := v.(type) {
	case manifest:
		return v, true
	case map[string]any:
		return v, true
	}
	return nil, false
}

func (m manifest) str(path ...any) string { s, _ := m.get(path...).(string); return s }

// render runs helm template with the --set values given and returns the objects by kind.
func render(t *testing.T, sets ...string) map[string]manifest {
	t.Helper()
	args := []string{"template", "rel", chartDir, "--namespace", "ns"}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	out, err := helm(t, args...)
	if err != nil {
		t.Fatalf("helm template %v: %v", sets, err)
	}
	objects := map[string]manifest{}
	dec := yaml.NewDecoder(strings.NewReader(out))
	for {
		var m manifest
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("rendered manifests are not YAML: %v\n%s", err, out)
		}
		if m == nil {
			continue
		}
		if _, dup := objects[m.kind()]; dup {
			t.Fatalf("two objects of kind %s", m.kind())
		}
		objects[m.kind()] = m
	}
	return objects
}

// productionValues are the settings docs/deploy.md recommends: several replicas on a shared
// SQL database, Redis password from a Secret, Prometheus Operator scraping.
var productionValues = []string{
	"replicaCount=3",
	"database.existingSecret=redstate-db",
	"redis.existingSecret=redstate-redis",
	"serviceMonitor.enabled=true",
	"config.redis.durability.wait-replicas=1",
}

// TestHelm_Lint: helm lint --strict accepts the chart with its defaults and with the
// production settings.
func TestHelm_Lint(t *testing.T) {
	if out, err := helm(t, "lint", "--strict", chartDir); err != nil {
		t.Fatalf("helm lint: %v\n%s", err, out)
	}
	args := []string{"lint", "--strict", chartDir}
	for _, s := range productionValues {
		args = append(args, "--set", s)
	}
	if out, err := helm(t, args...); err != nil {
		t.Fatalf("helm lint with production values: %v\n%s", err, out)
	}
}

// TestHelm_TemplateDefaults: the default rendering is one replica with a Deployment whose
// probes, port, configuration file, data directory and security context are as documented,
// a ConfigMap whose redstate.yaml the configuration loader accepts with the tokens of the
// generated Secret (an admin and a read token for Prometheus), a Service, and no PDB (one
// replica) or ServiceMonitor (off by default).
func TestHelm_TemplateDefaults(t *testing.T) {
	objs := render(t)
	for _, kind := range []string{"Deployment", "Service", "ConfigMap", "Secret", "ServiceAccount"} {
		if objs[kind] == nil {
			t.Fatalf("no %s rendered; got %v", kind, kindsOf(objs))
		}
	}
	for _, kind := range []string{"PodDisruptionBudget", "ServiceMonitor", "PersistentVolumeClaim"} {
		if objs[kind] != nil {
			t.Errorf("%s rendered by default", kind)
		}
	}
	secret := objs["Secret"]
	tokens := secretValue(t, secret, "tokens")
	parsed, err := config.ParseTokens(tokens)
	if err != nil || len(parsed) != 2 {
		t.Fatalf("generated tokens %q: %v", tokens, err)
	}
	metricsToken := secretValue(t, secret, "metrics-token")
	if !slices.ContainsFunc(parsed, func(tk config.Token) bool {
		return tk.Token == metricsToken && slices.Equal(tk.Roles, []string{"read"}) && len(tk.Token) >= 16
	}) {
		t.Errorf("metrics-token is not a read token of the tokens: %q", tokens)
	}
	cfg := checkDeployment(t, objs, map[string]string{"REDSTATE_AUTH_TOKENS": tokens})
	if cfg.Database.URL != "" {
		t.Errorf("default database.url %q", cfg.Database.URL)
	}
	if d := objs["Deployment"]; d.get("spec", "template", "spec", "volumes", 1, "emptyDir") == nil {
		t.Errorf("default data volume is not an emptyDir: %v", d.get("spec", "template", "spec", "volumes"))
	}
}

// TestHelm_TemplateProduction: with the production settings the Deployment takes the
// database URL and the Redis password from their Secrets, a PodDisruptionBudget keeps all but
// one replica through voluntary disruptions, and the ServiceMonitor scrapes /metrics with the
// read token.
func TestHelm_TemplateProduction(t *testing.T) {
	objs := render(t, productionValues...)
	cfg := checkDeployment(t, objs, map[string]string{
		"REDSTATE_AUTH_TOKENS":    secretValue(t, objs["Secret"], "tokens"),
		"REDSTATE_DATABASE_URL":   "postgres://redstate:secret@postgres:5432/redstate?sslmode=require",
		"REDSTATE_REDIS_PASSWORD": "secret",
	})
	if cfg.Redis.Durability.WaitReplicas != 1 {
		t.Errorf("wait-replicas = %d", cfg.Redis.Durability.WaitReplicas)
	}
	d := objs["Deployment"]
	if n, _ := d.get("spec", "replicas").(int); n != 3 {
		t.Errorf("replicas = %v", d.get("spec", "replicas"))
	}
	env := containerEnv(d)
	if env["REDSTATE_DATABASE_URL"] != "redstate-db/database-url" || env["REDSTATE_REDIS_PASSWORD"] != "redstate-redis/redis-password" {
		t.Errorf("secret environment = %v", env)
	}
	pdb := objs["PodDisruptionBudget"]
	if pdb == nil || pdb.str("apiVersion") != "policy/v1" || pdb.get("spec", "maxUnavailable") != 1 {
		t.Fatalf("PodDisruptionBudget = %v", pdb)
	}
	if !sameLabels(pdb.get("spec", "selector", "matchLabels"), d.get("spec", "template", "metadata", "labels")) {
		t.Errorf("PDB selector %v does not select the pods %v", pdb.get("spec", "selector", "matchLabels"), d.get("spec", "template", "metadata", "labels"))
	}
	sm := objs["ServiceMonitor"]
	if sm == nil || sm.str("apiVersion") != "monitoring.coreos.com/v1" {
		t.Fatalf("ServiceMonitor = %v", sm)
	}
	if sm.str("spec", "endpoints", 0, "path") != "/metrics" || sm.str("spec", "endpoints", 0, "port") != "http" ||
		sm.str("spec", "endpoints", 0, "authorization", "credentials", "name") != objs["Secret"].str("metadata", "name") ||
		sm.str("spec", "endpoints", 0, "authorization", "credentials", "key") != "metrics-token" {
		t.Errorf("ServiceMonitor endpoint = %v", sm.get("spec", "endpoints"))
	}
	if !sameLabels(sm.get("spec", "selector", "matchLabels"), objs["Service"].get("metadata", "labels")) {
		t.Errorf("ServiceMonitor selector %v does not select the Service %v", sm.get("spec", "selector", "matchLabels"), objs["Service"].get("metadata", "labels"))
	}
}

// TestHelm_TemplatePersistence: with persistence the data directory is a PersistentVolumeClaim
// and pods are replaced, not rolled (one pod holds the volume).
func TestHelm_TemplatePersistence(t *testing.T) {
	objs := render(t, "persistence.enabled=true", "persistence.size=5Gi")
	pvc := objs["PersistentVolumeClaim"]
	if pvc == nil || pvc.str("spec", "resources", "requests", "storage") != "5Gi" {
		t.Fatalf("PersistentVolumeClaim = %v", pvc)
	}
	d := objs["Deployment"]
	if d.str("spec", "template", "spec", "volumes", 1, "persistentVolumeClaim", "claimName") != pvc.str("metadata", "name") ||
		d.str("spec", "strategy", "type") != "Recreate" {
		t.Errorf("Deployment volumes %v strategy %v", d.get("spec", "template", "spec", "volumes"), d.get("spec", "strategy"))
	}
}

// TestHelm_TemplateRefusals: settings that would deploy something broken stop helm with a
// message saying why.
func TestHelm_TemplateRefusals(t *testing.T) {
	for _, tc := range []struct {
		sets []string
		want string
	}{
		{[]string{"replicaCount=2"}, "shared SQL database"},
		{[]string{"persistence.enabled=true", "replicaCount=2", "database.existingSecret=db"}, "needs replicaCount 1"},
		{[]string{"config.server.addr=0.0.0.0:0"}, "fixed port"},
		{[]string{"config.data-dir=data"}, "absolute path"},
		{[]string{"serviceMonitor.enabled=true", "auth.existingSecret=mine"}, "serviceMonitor.tokenSecret"},
	} {
		args := []string{"template", "rel", chartDir}
		for _, s := range tc.sets {
			args = append(args, "--set", s)
		}
		if _, err := helm(t, args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("helm template %v: %v, want an error saying %q", tc.sets, err, tc.want)
		}
	}
}

// checkDeployment checks the Deployment against the ConfigMap and Service and returns the
// configuration serve would run with (the ConfigMap's file plus env).
func checkDeployment(t *testing.T, objs map[string]manifest, env map[string]string) config.Config {
	t.Helper()
	cm := objs["ConfigMap"]
	cfg := loadConfigFile(t, []byte(cm.str("data", "redstate.yaml")), env)
	d := objs["Deployment"]
	pod := must(asMap(d.get("spec", "template", "spec")))
	c := must(asMap(pod.get("containers", 0)))
	if got := strings.Join(anyStrings(c.get("args")), " "); got != "serve --config /etc/redstate/redstate.yaml" {
		t.Errorf("args = %q", got)
	}
	mounts := map[string]string{}
	for _, m := range c.get("volumeMounts").([]any) {
		mm, _ := asMap(m)
		mounts[mm.str("mountPath")] = mm.str("name")
	}
	volumes := map[string]manifest{}
	for _, v := range pod.get("volumes").([]any) {
		vm, _ := asMap(v)
		volumes[vm.str("name")] = vm
	}
	if cmName := volumes[mounts["/etc/redstate"]].str("configMap", "name"); cmName != cm.str("metadata", "name") {
		t.Errorf("/etc/redstate is volume %q (configMap %q), want the ConfigMap %q", mounts["/etc/redstate"], cmName, cm.str("metadata", "name"))
	}
	if mounts[cfg.DataDir] == "" || mounts["/tmp"] == "" {
		t.Errorf("data-dir %s and /tmp must be mounted (read-only root filesystem): %v", cfg.DataDir, mounts)
	}
	port := cfg.Server.Addr[strings.LastIndex(cfg.Server.Addr, ":")+1:]
	if p, _ := asMap(c.get("ports", 0)); p.str("name") != "http" || fmt.Sprint(p["containerPort"]) != port {
		t.Errorf("container ports %v, want http on %s", c.get("ports"), port)
	}
	for probe, path := range map[string]string{"readinessProbe": "/readyz", "livenessProbe": "/healthz"} {
		if c.str(probe, "httpGet", "path") != path || c.str(probe, "httpGet", "port") != "http" {
			t.Errorf("%s = %v, want GET %s on http", probe, c.get(probe), path)
		}
	}
	if objs["Service"].str("spec", "ports", 0, "targetPort") != "http" {
		t.Errorf("Service ports = %v", objs["Service"].get("spec", "ports"))
	}
	if c.get("securityContext", "readOnlyRootFilesystem") != true || c.get("securityContext", "allowPrivilegeEscalation") != false ||
		!slices.Equal(anyStrings(c.get("securityContext", "capabilities", "drop")), []string{"ALL"}) ||
		pod.get("securityContext", "runAsNonRoot") != true {
		t.Errorf("security contexts: pod %v container %v", pod.get("securityContext"), c.get("securityContext"))
	}
	if c.get("resources", "requests", "cpu") == nil || c.get("resources", "requests", "memory") == nil || c.get("resources", "limits", "memory") == nil {
		t.Errorf("resources = %v", c.get("resources"))
	}
	grace, _ := pod.get("terminationGracePeriodSeconds").(int)
	if float64(grace) <= cfg.Server.ShutdownTimeout.Seconds() {
		t.Errorf("terminationGracePeriodSeconds %d leaves no room after server.shutdown-timeout %s", grace, cfg.Server.ShutdownTimeout)
	}
	if containerEnv(d)["REDSTATE_AUTH_TOKENS"] != objs["Secret"].str("metadata", "name")+"/tokens" {
		t.Errorf("REDSTATE_AUTH_TOKENS does not come from the chart's Secret: %v", containerEnv(d))
	}
	return cfg
}

// containerEnv maps the first container's environment: a value, or secret/key for one taken
// from a Secret.
func containerEnv(d manifest) map[string]string {
	env := map[string]string{}
	list, _ := d.get("spec", "template", "spec", "containers", 0, "env").([]any)
	for _, e := range list {
		m, _ := asMap(e)
		if r, ok := asMap(m.get("valueFrom", "secretKeyRef")); ok {
			env[m.str("name")] = r.str("name") + "/" + r.str("key")
			continue
		}
		env[m.str("name")] = m.str("value")
	}
	return env
}

// secretValue decodes one key of a rendered Secret.
func secretValue(t *testing.T, s manifest, key string) string {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s.str("data", key))
	if err != nil || len(b) == 0 {
		t.Fatalf("secret key %s: %q %v", key, s.str("data", key), err)
	}
	return string(b)
}

// sameLabels reports whether every label of selector is on labels.
func sameLabels(selector, labels any) bool {
	sel, _ := asMap(selector)
	lab, _ := asMap(labels)
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if lab[k] != v {
			return false
		}
	}
	return true
}

// must returns m, the map of a path the manifests always have.
func must(m manifest, ok bool) manifest {
	if !ok {
		panic("not a map")
	}
	return m
}

func anyStrings(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, e := range l {
		s, _ := e.(string)
		out = append(out, s)
	}
	return out
}

func kindsOf(objs map[string]manifest) []string {
	var out []string
	for k := range objs {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
