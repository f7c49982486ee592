//go:build soak

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/redstate/redstate/redistest"
)

// rssKB returns a process's current and peak resident set sizes in KiB (VmRSS, VmHWM).
func rssKB(t *testing.T, pid int) (cur, peak int) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		n, _ := strconv.Atoi(fields[1])
		switch fields[0] {
		case "VmRSS:":
			cur = n
		case "VmHWM:":
			peak = n
		}
	}
	return cur, peak
}

// TestSoak_BatchOfLargeBuildsStaysBounded is the hardening issue's scenario: 100 builds of
// about 1 MB and one batch read of all of them. The response is bounded by
// server.max-response-bytes (the rest deferred) and the server's memory stays far below the
// 517 MB measured before streaming. Built without the race detector so RSS means something;
// numbers are logged (-v) and recorded in docs/buildstatus.md.
func TestSoak_BatchOfLargeBuildsStaysBounded(t *testing.T) {
	useNonRaceBinary(t)
	rds := redistest.StartStandalone(t)
	s := startServer(t, "--redis", rds.URL)

	big := strings.Repeat("x", 8000)
	var ids []string
	for i := range 100 {
		id := fmt.Sprintf("%08x-0000-4000-8000-000000000000", i+1)
		ids = append(ids, id)
		results := map[string]any{}
		platforms := []string{}
		for p := range 40 { // 40 platforms × 3 × 8 KB ≈ 0.96 MB
			name := fmt.Sprintf("p%02d", p)
			platforms = append(platforms, name)
			results[name] = map[string]any{"platform": name, "status": "FAILED", "progress": 0,
				"logUrl": "logs/" + big[:7000], "downloadUrl": "dl/" + big[:7000], "errorMessage": big}
		}
		doc, _ := json.Marshal(map[string]any{"buildId": id, "projectId": "big", "platforms": platforms,
			"status": "IN_PROGRESS", "platformResults": results})
		if code, body, _ := s.do(t, http.MethodPut, "/v1/builds/"+id, string(doc)); code != http.StatusOK {
			t.Fatalf("PUT %d: %d %.200s", i, code, body)
		}
	}
	pid := s.cmd.Process.Pid
	before, _ := rssKB(t, pid)
	code, body, _ := s.do(t, http.MethodGet, "/v1/builds?ids="+strings.Join(ids, ","), "")
	if code != http.StatusOK {
		t.Fatalf("batch: %d", code)
	}
	var got struct {
		Builds   map[string]json.RawMessage `json:"builds"`
		Deferred []string                   `json:"deferred"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	after, peak := rssKB(t, pid)
	t.Logf("batch of 100 × ~1 MB: response %d bytes (%d builds, %d deferred); server RSS %d MB before, %d MB after, peak %d MB",
		len(body), len(got.Builds), len(got.Deferred), before/1024, after/1024, peak/1024)
	if len(body) > 33<<20 || len(got.Builds)+len(got.Deferred) != 100 {
		t.Fatalf("response %d bytes, %d builds + %d deferred", len(body), len(got.Builds), len(got.Deferred))
	}
	if peak > 400*1024 {
		t.Fatalf("server peak RSS %d MB", peak/1024)
	}
}
