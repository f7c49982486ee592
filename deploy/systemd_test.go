package deploy

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// unitPath is the systemd unit, relative to the repository's top directory.
const unitPath = "deploy/systemd/redstate.service"

// unitDirectives returns the unit's directives, key → values in order.
func unitDirectives(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(readFile(t, unitPath)))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "[") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("unit line %q is not KEY=VALUE", line)
		}
		out[k] = append(out[k], v)
	}
	return out
}

// TestSystemd_UnitSandboxing: the unit has the sandboxing docs/deploy.md promises.
func TestSystemd_UnitSandboxing(t *testing.T) {
	d := unitDirectives(t)
	for key, want := range map[string]string{
		"DynamicUser":             "yes",
		"StateDirectory":          "redstate",
		"ProtectSystem":           "strict",
		"ProtectHome":             "yes",
		"PrivateTmp":              "yes",
		"NoNewPrivileges":         "yes",
		"CapabilityBoundingSet":   "",
		"RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX",
		"Restart":                 "on-failure",
		"EnvironmentFile":         "-/etc/redstate/env",
	} {
		if !slices.Contains(d[key], want) {
			t.Errorf("%s = %q, want %q", key, d[key], want)
		}
	}
	if !slices.Contains(d["SystemCallFilter"], "@system-service") {
		t.Errorf("SystemCallFilter = %q, want @system-service", d["SystemCallFilter"])
	}
	exec := strings.Join(d["ExecStart"], " ")
	for _, want := range []string{" serve ", "--config /etc/redstate/redstate.yaml", "--data-dir ${STATE_DIRECTORY}"} {
		if !strings.Contains(exec, want) {
			t.Errorf("ExecStart %q lacks %q", exec, want)
		}
	}
}

// TestSystemd_VerifyAndSecurity runs systemd-analyze on the unit, copied next to a freshly
// built redstate binary with ExecStart pointing at it (verify checks that the command exists
// and is executable; /usr/local/bin/redstate is not installed here): verify must print nothing
// about the unit (it exits 0 even for unknown keys and values it cannot parse, so any line
// naming the unit fails the test) and security --offline must rate its exposure at most 2.0.
func TestSystemd_VerifyAndSecurity(t *testing.T) {
	analyze := requireTool(t, "systemd-analyze", "scripts/ensure-systemd-analyze.sh")
	dir := t.TempDir()
	bin := serverBinary(t)
	unit := strings.ReplaceAll(string(readFile(t, unitPath)), "ExecStart=/usr/local/bin/redstate ", "ExecStart="+bin+" ")
	if !strings.Contains(unit, "ExecStart="+bin) {
		t.Fatal("ExecStart does not run /usr/local/bin/redstate")
	}
	path := filepath.Join(dir, "redstate.service")
	if err := os.WriteFile(path, []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	if err != nil || bytes.Contains(out, []byte("redstate.service")) {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
	out, err = exec.Command(analyze, "security", "--offline=yes", "--threshold=20", "--no-pager", path).CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze security: exposure above 2.0 or error: %v\n%s", err, out)
	}
	if m := regexp.MustCompile(`Overall exposure level for redstate.service: ([0-9.]+)`).FindSubmatch(out); m == nil {
		t.Fatalf("no exposure level in\n%s", out)
	} else {
		t.Logf("exposure %s", m[1])
	}
}

// TestSystemd_ExecStartServesAndStopsInTime runs the unit's ExecStart command line as systemd
// would (its Environment, ${STATE_DIRECTORY} set to a fresh directory, a configuration file in
// the place of /etc/redstate/redstate.yaml): the server starts, keeps its SQLite database in
// the state directory, and on KillSignal exits 0 well within TimeoutStopSec.
func TestSystemd_ExecStartServesAndStopsInTime(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server")
	}
	d := unitDirectives(t)
	dir := t.TempDir()
	bin := serverBinary(t)
	state := filepath.Join(dir, "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "redstate.yaml")
	if err := os.WriteFile(cfgPath, []byte("server:\n  addr: 127.0.0.1:0\n  shutdown-timeout: 5s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := strings.Fields(d["ExecStart"][0])[1:]
	for i, a := range args {
		switch a {
		case "${STATE_DIRECTORY}":
			args[i] = state
		case "/etc/redstate/redstate.yaml":
			args[i] = cfgPath
		}
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "STATE_DIRECTORY=" + state}
	for _, e := range d["Environment"] {
		cmd.Env = append(cmd.Env, e)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	logs := &lockedBuffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if !logs.waitFor(ctx, `"msg":"listening on `) {
		t.Fatalf("no listen log line (ExecStart %v):\n%s", args, logs)
	}
	if _, err := os.Stat(filepath.Join(state, "redstate.db")); err != nil {
		t.Errorf("no SQLite database in $STATE_DIRECTORY: %v\n%s", err, logs)
	}
	stop, err := time.ParseDuration(strings.TrimSpace(d["TimeoutStopSec"][0]))
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.Signal(signalNumber(t, d["KillSignal"][0]))); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit after %s: %v\n%s", d["KillSignal"][0], err, logs)
		}
	case <-time.After(stop):
		t.Fatalf("still running %s (TimeoutStopSec) after %s:\n%s", stop, d["KillSignal"][0], logs)
	}
}

// signalNumber maps a unit's KillSignal name to its number.
func signalNumber(t *testing.T, name string) int {
	t.Helper()
	switch name {
	case "SIGTERM":
		return int(syscall.SIGTERM)
	case "SIGINT":
		return int(syscall.SIGINT)
	}
	t.Fatalf("KillSignal %s: redstate stops gracefully on SIGTERM or SIGINT", name)
	return 0
}
