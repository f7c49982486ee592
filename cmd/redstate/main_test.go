package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestServerLinksNoBenchmarkPeers: the server binary carries none of the libraries only the
// benchmarks need (the peers they measure against and the fake Kafka); those live in
// cmd/redstate-bench, so the server stays small and its dependency list short.
func TestServerLinksNoBenchmarkPeers(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := string(out)
	if !strings.Contains(deps, "github.com/redstate/redstate/cli") {
		t.Fatalf("go list -deps did not list the server's packages:\n%s", deps)
	}
	for _, peer := range []string{"github.com/hibiken/asynq", "github.com/bsm/redislock", "github.com/twmb/franz-go/pkg/kfake", "github.com/redstate/redstate/bench"} {
		for _, line := range strings.Split(deps, "\n") {
			if line == peer || strings.HasPrefix(line, peer+"/") {
				t.Errorf("the server links %s", line)
			}
		}
	}
}
