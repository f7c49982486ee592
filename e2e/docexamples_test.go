package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate/config"
	"github.com/redstate/redstate/redistest"
)

// docDefaultAddrs are the addresses the docs' examples assume (serve's default); the test
// replaces them with the live server's.
var docDefaultAddrs = []string{"http://127.0.0.1:8080", "http://localhost:8080"}

// streamFor is how long an event-stream example (curl -N) runs before curl is cut off.
const streamFor = 3 * time.Second

// TestDocs_CurlExamplesWork runs every curl example of README.md and docs/*.md (see docExample
// for the markdown conventions: `# expect NNN`, `# untested: REASON`, `<!-- file: NAME -->`)
// in document order, README first, against one live `redstate serve --demo --redis URL`: the
// start command docs/getting-started.md gives, nothing added but the address. The demo layer
// holds what the examples need (the index table of docs/index.md, the stage handler "steps" the
// README's plan names, a report generator slow enough that a submitted report is still in
// status 3 when the examples regenerate it); TestDocs_DemoTableIsTheDocumentedOne keeps its
// table the one the docs declare. Each example must answer 2xx, or the status its `# expect`
// comment names.
//
// The examples run with real curl through bash, not as requests rebuilt in Go from curl's
// arguments: readers paste these lines into a shell, so quoting, `-d @file`, `-I`, `-N`, pipes
// and the variables set by earlier lines (`B=...`) must work as bash and curl take them. A shell
// function named curl adds `-D FILE` (the response headers; the status is the last status
// line, so a 100 Continue does not count) and `--max-time`. `http://127.0.0.1:8080` and
// `http://localhost:8080` are replaced by the live address. An event stream (`-N`) never
// ends by itself: it passes when curl was cut off after streamFor (exit 28) having received a
// 2xx text/event-stream answer. An example whose pipe needs a program that is not installed
// (exit 127, e.g. jq) is skipped with that reason.
func TestDocs_CurlExamplesWork(t *testing.T) {
	rds := redistest.StartStandalone(t)
	runDocExamples(t, func(docExample) bool { return true }, "--demo", "--redis", rds.URL)
}

// TestDocs_ReadmeExamplesWorkWithoutRedis runs the README's curl examples against `redstate
// serve --demo` on the embedded default (no Redis: memory backends, SQLite), as a newcomer's
// first try does: the quick start works with or without --redis.
func TestDocs_ReadmeExamplesWorkWithoutRedis(t *testing.T) {
	runDocExamples(t, func(ex docExample) bool { return ex.file == "README.md" }, "--demo")
}

// runDocExamples runs the examples keep selects, in document order, against one `redstate serve`
// started with args (plus its address and a data directory).
func runDocExamples(t *testing.T, keep func(docExample) bool, args ...string) {
	if testing.Short() {
		t.Skip("real processes: not under -short")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("the doc examples are curl commands; install curl (apt-get install curl)")
	}
	all, files := docExamples(t)
	examples := slices.DeleteFunc(all, func(ex docExample) bool { return !keep(ex) })
	if len(examples) == 0 {
		t.Fatal("no curl example found in README.md and docs/*.md; the parser is broken")
	}
	work := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(work, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s := startServer(t, args...)
	ran, skipped := 0, 0
	for _, ex := range examples {
		t.Run(ex.String(), func(t *testing.T) {
			if ex.skip != "" {
				skipped++
				t.Skipf("untested: %s", ex.skip)
			}
			if reason := runDocExample(t, ex, s, work); reason != "" {
				skipped++
				t.Skip(reason)
			}
			ran++
		})
	}
	t.Logf("%d curl examples: %d ran, %d skipped", len(examples), ran, skipped)
}

// docExamples parses README.md and docs/*.md (sorted) and returns their examples in order and
// the files they define.
func docExamples(t *testing.T) ([]docExample, map[string]string) {
	t.Helper()
	docs, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(docs)
	var all []docExample
	files := map[string]string{}
	for _, path := range append([]string{"../README.md"}, docs...) {
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		examples, defined, err := parseDocExamples(strings.TrimPrefix(path, "../"), string(text))
		if err != nil {
			t.Fatal(err)
		}
		for name, content := range defined {
			if _, dup := files[name]; dup {
				t.Fatalf("%s defines the file %s another doc defines too", path, name)
			}
			files[name] = content
		}
		all = append(all, examples...)
	}
	if files["index-table.yaml"] == "" {
		t.Fatal("docs/index.md no longer marks its table declaration <!-- file: index-table.yaml -->; the index examples need it")
	}
	return all, files
}

// TestDocs_DemoTableIsTheDocumentedOne: the index table of `serve --demo` is the one docs/index.md
// declares (its block <!-- file: index-table.yaml -->), so the documented queries meet the table
// the demo declares.
func TestDocs_DemoTableIsTheDocumentedOne(t *testing.T) {
	_, files := docExamples(t)
	dir := t.TempDir()
	documented, demo := filepath.Join(dir, "index-table.yaml"), filepath.Join(dir, "demo.yaml")
	if err := os.WriteFile(documented, []byte(files["index-table.yaml"]), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(demo, []byte("demo: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	want, err := config.Load(documented, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := config.Load(demo, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Index, want.Index) {
		t.Fatalf("serve --demo declares\n%+v\nbut docs/index.md declares\n%+v", got.Index, want.Index)
	}
}

// statusLineRE matches a status line of curl's header dump.
var statusLineRE = regexp.MustCompile(`(?m)^HTTP/[0-9.]+ (\d{3})`)

// runDocExample runs one example with bash and curl and checks its status. It returns why the
// example could not run here (a program it pipes into is missing), "" when it ran.
func runDocExample(t *testing.T, ex docExample, s *server, work string) string {
	t.Helper()
	live := func(v string) string {
		for _, a := range docDefaultAddrs {
			v = strings.ReplaceAll(v, a, s.Base)
		}
		return v
	}
	script := live(ex.script)
	if !strings.Contains(script, "$B") && !strings.Contains(script, "${B}") && !strings.Contains(script, s.Base) {
		t.Fatalf("the example addresses neither $B nor %s, so it would not reach the server:\n%s", docDefaultAddrs[0], ex.script)
	}
	maxTime, stream := 60*time.Second, regexp.MustCompile(`\s-N\b`).MatchString(script)
	if stream {
		maxTime = streamFor
	}
	headers := filepath.Join(t.TempDir(), "headers")
	ctx, cancel := context.WithTimeout(context.Background(), maxTime+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", fmt.Sprintf(
		"set -euo pipefail\ncurl() { command curl --max-time %d -D %q \"$@\"; }\n%s", int(maxTime.Seconds()), headers, script))
	cmd.Dir = work
	cmd.Env = os.Environ()
	for _, kv := range ex.env {
		cmd.Env = append(cmd.Env, live(kv))
	}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if code == 127 {
		return "a program the example needs is not installed: " + strings.TrimSpace(stderr.String())
	}
	dump, _ := os.ReadFile(headers)
	status := 0
	if m := statusLineRE.FindAllStringSubmatch(string(dump), -1); len(m) > 0 {
		status, _ = strconv.Atoi(m[len(m)-1][1])
	}
	cutStream := stream && code == 28 && strings.Contains(strings.ToLower(string(dump)), "content-type: text/event-stream")
	ok := (code == 0 || cutStream) && (status == ex.expect || (ex.expect == 0 && status >= 200 && status < 300))
	if !ok {
		want := "2xx"
		if ex.expect != 0 {
			want = strconv.Itoa(ex.expect)
		}
		t.Errorf("%s: status %d (want %s), bash exit %d\n%s\nstdout: %s\nstderr: %s\nheaders:\n%s\nserver log tail:\n%s",
			ex, status, want, code, ex.script, clip(stdout.String()), clip(stderr.String()), dump, tail(s.Logs(), 10))
	}
	return ""
}

// clip shortens output quoted in failure messages.
func clip(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "..."
	}
	return s
}
