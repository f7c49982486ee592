package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/redistest"
)

// podmanGlobal are the global flags podman needs on this kind of machine (no systemd, runc).
var podmanGlobal = []string{"--runtime", "runc", "--cgroup-manager", "cgroupfs"}

// podman runs podman with the global flags and args, returning its combined output.
func podman(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "podman", append(append([]string{}, podmanGlobal...), args...)...).CombinedOutput()
	return string(out), err
}

// requirePodman skips without podman, or fails under make test (which installs it with
// scripts/ensure-podman.sh).
func requirePodman(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("podman"); err == nil {
		return
	}
	if os.Getenv("REDSTATE_REQUIRE_REDIS") == "1" {
		t.Fatal("podman is not installed (make test runs scripts/ensure-podman.sh)")
	}
	t.Skip("podman is not installed")
}

// TestImage_ServesAgainstHostRedis builds the image as `make image` does (FROM scratch, from the
// release binary), checks its configuration (non-root, entrypoint and default command, port,
// volume, health check, labels), runs it with its default command against a Redis on the host,
// writes and reads a build through the API, runs the image's health check inside it, and stops
// it gracefully: the published image works as docs/deploy.md describes.
func TestImage_ServesAgainstHostRedis(t *testing.T) {
	requirePodman(t)
	image := fmt.Sprintf("localhost/redstate-e2e-%d", os.Getpid())
	build := exec.Command("../scripts/image.sh")
	build.Env = append(os.Environ(), "IMAGE="+image, "VERSION=v0.0.0-e2e")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("scripts/image.sh: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = podman(t, "rmi", "-f", image+":latest", image+":v0.0.0-e2e") })

	out, err := podman(t, "image", "inspect", image+":latest")
	if err != nil {
		t.Fatalf("image inspect: %v\n%s", err, out)
	}
	var inspected []struct {
		Config struct {
			User         string
			Entrypoint   []string
			Cmd          []string
			ExposedPorts map[string]any
			Volumes      map[string]any
			Labels       map[string]string
			Env          []string
		}
		HealthCheck *struct{ Test []string }
	}
	if err := json.Unmarshal([]byte(out), &inspected); err != nil || len(inspected) != 1 {
		t.Fatalf("image inspect output: %v\n%s", err, out)
	}
	cfg := inspected[0].Config
	if cfg.User != "65532:65532" || strings.Join(cfg.Entrypoint, " ") != "/usr/local/bin/redstate" || strings.Join(cfg.Cmd, " ") != "serve" {
		t.Errorf("user %q entrypoint %q cmd %q; want 65532:65532, /usr/local/bin/redstate, serve", cfg.User, cfg.Entrypoint, cfg.Cmd)
	}
	if _, ok := cfg.ExposedPorts["8080/tcp"]; !ok {
		t.Errorf("exposed ports %v lack 8080/tcp", cfg.ExposedPorts)
	}
	if _, ok := cfg.Volumes["/data"]; !ok {
		t.Errorf("volumes %v lack /data", cfg.Volumes)
	}
	if cfg.Labels["org.opencontainers.image.version"] != "v0.0.0-e2e" || cfg.Labels["org.opencontainers.image.licenses"] != "Apache-2.0" || cfg.Labels["org.opencontainers.image.source"] == "" {
		t.Errorf("labels %v", cfg.Labels)
	}
	if hc := inspected[0].HealthCheck; hc == nil || !strings.Contains(strings.Join(hc.Test, " "), "/usr/local/bin/redstate health --url http://127.0.0.1:8080/readyz") {
		t.Errorf("health check %+v", inspected[0].HealthCheck)
	}

	rds := redistest.StartStandalone(t)
	port := freeTCPPort(t)
	name := fmt.Sprintf("redstate-e2e-%d", os.Getpid())
	out, err = podman(t, "run", "-d", "--name", name, "--network", "host",
		"--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024", "--health-cmd", "none",
		"-e", fmt.Sprintf("REDSTATE_SERVER_ADDR=127.0.0.1:%d", port), "-e", "REDSTATE_REDIS_URL="+rds.URL,
		image+":latest")
	if err != nil {
		t.Fatalf("podman run: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := podman(t, "logs", name)
			t.Logf("container logs:\n%s", logs)
		}
		_, _ = podman(t, "rm", "-f", "-t", "0", name)
	})
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	eventually(t, 30*time.Second, "the container's /readyz answers 200", func() bool {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	id := "0d8b2f5e-6c1a-4f3e-9b7d-2a4c6e8f0a1b"
	req, _ := http.NewRequest(http.MethodPut, base+"/v1/builds/"+id, strings.NewReader(buildWithID(id, "2025-11-09T10:33:00")))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode/100 != 2 {
		t.Fatalf("PUT a build into the container: %v %v", err, resp)
	}
	resp.Body.Close()
	if n, err := rds.Client(t).Exists(context.Background(), buildstatus.NewKeys(redstate.KeyPrefix{}).Build(id)).Result(); err != nil || n != 1 {
		t.Fatalf("the build is not in the host's Redis: %d, %v", n, err)
	}
	if out, err := podman(t, "exec", name, "/usr/local/bin/redstate", "health", "--url", base+"/readyz"); err != nil {
		t.Fatalf("redstate health inside the image: %v\n%s", err, out)
	}
	if out, err := podman(t, "stop", "-t", "20", name); err != nil {
		t.Fatalf("podman stop: %v\n%s", err, out)
	}
	if out, err := podman(t, "inspect", "--format", "{{.State.ExitCode}}", name); err != nil || strings.TrimSpace(out) != "0" {
		t.Fatalf("exit code after SIGTERM: %q, %v (want a graceful 0)", out, err)
	}
}

// freeTCPPort returns a loopback port that was free a moment ago.
func freeTCPPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
