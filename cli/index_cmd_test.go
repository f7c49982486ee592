package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/redstate/redstate/redistest"
)

// TestIndexReplayAndVerify: replay a recorded stream (twice: idempotent), verify against a
// matching snapshot (clean), a differing one (exit error, the differences reported), repair,
// verify again (clean).
func TestIndexReplayAndVerify(t *testing.T) {
	srv := redistest.StartStandalone(t)
	dir := t.TempDir()
	cfg := writeConfig(t, indexConfig)
	var events, snap strings.Builder
	for id := 1; id <= 300; id++ {
		fmt.Fprintf(&events, `{"db":"db1","table":"table1","op":"insert","row":{"id":%d,"lastAddrId":%d,"categoryId":1,"brandId":null,"yn":1},"version":{"file":"mysql-bin.000001","pos":%d,"row":0}}`+"\n", id, id%4, id)
		fmt.Fprintf(&snap, `{"db":"db1","table":"table1","row":{"id":%d,"lastAddrId":%d,"categoryId":1,"brandId":null,"yn":1}}`+"\n", id, id%4)
	}
	eventsPath, snapPath := filepath.Join(dir, "events.jsonl"), filepath.Join(dir, "snap.jsonl")
	if err := os.WriteFile(eventsPath, []byte(events.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(snapPath, []byte(snap.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"--config", cfg, "--redis", srv.URL}
	out, err := run(t, append([]string{"index", "replay", eventsPath, "--batch", "64"}, base...)...)
	if err != nil || !strings.Contains(out, "replayed 300 events") || !strings.Contains(out, "300 applied") {
		t.Fatalf("replay: %v\n%s", err, out)
	}
	if out, err = run(t, append([]string{"index", "replay", eventsPath}, base...)...); err != nil || !strings.Contains(out, "0 applied, 300 stale") {
		t.Fatalf("second replay: %v\n%s", err, out)
	}
	// Each replay added its counts to the shared counters.
	if out, err = run(t, append([]string{"index", "status"}, base...)...); err != nil || !regexp.MustCompile(`(?m)^db1\.table1\s+300\s+300\s+0\s*$`).MatchString(out) {
		t.Fatalf("index status: %v\n%s", err, out)
	}
	if out, err = run(t, append([]string{"index", "status", "--json"}, base...)...); err != nil ||
		strings.TrimSpace(out) != `{"tables":[{"db":"db1","table":"table1","applied":300,"stale":300,"failed":0}],"skipped":0,"unreadable":0}` {
		t.Fatalf("index status --json: %v\n%s", err, out)
	}
	if out, err = run(t, append([]string{"index", "verify", "--snapshot", snapPath}, base...)...); err != nil || !strings.Contains(out, `"missing":0,"stale":0,"extra":0`) {
		t.Fatalf("verify clean: %v\n%s", err, out)
	}
	changed := strings.Replace(snap.String(), `{"id":7,"lastAddrId":3,`, `{"id":7,"lastAddrId":2,`, 1) + `{"db":"db1","table":"table1","row":{"id":999,"lastAddrId":0,"categoryId":1,"yn":1}}` + "\n"
	if err := os.WriteFile(snapPath, []byte(changed), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = run(t, append([]string{"index", "verify", "--snapshot", snapPath}, base...)...)
	if err == nil || !strings.Contains(out, `"missing":4`) || !strings.Contains(out, `"extra":2`) {
		t.Fatalf("verify with differences: %v\n%s", err, out)
	}
	if out, err = run(t, append([]string{"index", "verify", "--snapshot", snapPath, "--repair"}, base...)...); err != nil {
		t.Fatalf("repair: %v\n%s", err, out)
	}
	if out, err = run(t, append([]string{"index", "verify", "--snapshot", snapPath}, base...)...); err != nil || !strings.Contains(out, `"missing":0,"stale":0,"extra":0`) {
		t.Fatalf("verify after repair: %v\n%s", err, out)
	}
}

// TestIndexReplay_CanalBatchAcrossApplyBatches replays the five flat messages of one Canal batch
// (one id, one es) in applies of two events: each event keeps its line as delivery position, so
// the batch ends as in order (A deleted, B in 504) and a second replay is stale throughout.
func TestIndexReplay_CanalBatchAcrossApplyBatches(t *testing.T) {
	srv := redistest.StartStandalone(t)
	msg := func(typ string, rows ...string) string {
		return `{"data":[` + strings.Join(rows, ",") + `],"database":"db1","table":"table1","type":"` + typ + `","es":1700000000000,"id":41,"isDdl":false}`
	}
	row := func(id, cat string) string {
		return `{"id":"` + id + `","lastAddrId":"72","categoryId":"` + cat + `","brandId":"1","yn":"1"}`
	}
	lines := strings.Join([]string{msg("INSERT", row("1", "501"), row("2", "501")), msg("UPDATE", row("2", "502")),
		msg("UPDATE", row("1", "503"), row("2", "503")), "", msg("UPDATE", row("2", "504")), msg("DELETE", row("1", "503"))}, "\n")
	path := filepath.Join(t.TempDir(), "canal.jsonl")
	if err := os.WriteFile(path, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"--config", writeConfig(t, indexConfig), "--redis", srv.URL}
	if out, err := run(t, append([]string{"index", "replay", path, "--format", "canal", "--batch", "2"}, base...)...); err != nil || !strings.Contains(out, "7 applied, 0 stale") {
		t.Fatalf("replay: %v\n%s", err, out)
	}
	if out, err := run(t, append([]string{"index", "replay", path, "--format", "canal", "--batch", "3"}, base...)...); err != nil || !strings.Contains(out, "0 applied, 7 stale") {
		t.Fatalf("second replay: %v\n%s", err, out)
	}
	client := srv.Client(t)
	for key, want := range map[string]int64{"las_im_data_sync:db1:table1:las-72:cat-504": 1, "las_im_data_sync:db1:table1:las-72:cat-503": 0, "las_im_data_sync:db1:table1:las-72:cat-501": 0} {
		key = strings.Replace(key, "las_im_data_sync:db1:table1", "{las_im_data_sync:db1:table1}", 1)
		if n, err := client.HLen(t.Context(), key).Result(); err != nil || n != want {
			t.Errorf("HLEN %s = %d, %v; want %d", key, n, err, want)
		}
	}
}

// TestIndexReplay_FailedEventsExitNonZero: a replay where one event is refused (a value that is
// not the column's type) applies the others, lists the failure, and returns an error so a CI
// job sees it.
func TestIndexReplay_FailedEventsExitNonZero(t *testing.T) {
	srv := redistest.StartStandalone(t)
	row := func(id, cat string) string {
		return `{"db":"db1","table":"table1","op":"upsert","row":{"id":"` + id + `","lastAddrId":"72","categoryId":"` + cat + `","brandId":"1","yn":"1"},"version":{"tsMs":1700000000000,"batch":1}}`
	}
	lines := strings.Join([]string{row("1", "501"), row("2", "seven"), row("3", "501")}, "\n")
	path := filepath.Join(t.TempDir(), "events.jsonl")
	if err := os.WriteFile(path, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"--config", writeConfig(t, indexConfig), "--redis", srv.URL}
	out, err := run(t, append([]string{"index", "replay", path}, base...)...)
	if err == nil || !strings.Contains(err.Error(), "1 of 3 events failed") {
		t.Fatalf("replay with a failed event: err = %v, want '1 of 3 events failed'\n%s", err, out)
	}
	if !strings.Contains(out, "2 applied") || !strings.Contains(out, "1 failed") || !strings.Contains(out, `"seven"`) {
		t.Fatalf("replay summary lacks the applied count or the failure:\n%s", out)
	}
}
