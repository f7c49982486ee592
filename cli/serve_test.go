package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// logLines is an io.Writer that collects log lines and hands JSON records to waiters.
type logLines struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	lines chan map[string]any
}

func newLogLines() *logLines { return &logLines{lines: make(chan map[string]any, 1000)} }

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	sc := bufio.NewScanner(bytes.NewReader(p))
	for sc.Scan() {
		var rec map[string]any
		if json.Unmarshal(sc.Bytes(), &rec) == nil {
			select {
			case l.lines <- rec:
			default:
			}
		}
	}
	return len(p), nil
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// startServe runs `redstate serve args...` in-process and returns its base URL, a cancel that
// stands for SIGTERM, and the channel of its result.
func startServe(t *testing.T, args ...string) (base string, logs *logLines, stop context.CancelFunc, done <-chan error) {
	t.Helper()
	logs = newLogLines()
	root := NewRootCommand()
	root.SetArgs(append([]string{"serve", "--addr", "127.0.0.1:0", "--log-format", "json", "--data-dir", t.TempDir()}, args...))
	root.SetOut(io.Discard)
	root.SetErr(logs)
	ctx, cancel := context.WithCancel(context.Background())
	result := make(chan error, 1)
	finished := make(chan struct{})
	go func() { result <- root.ExecuteContext(ctx); close(finished) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-finished:
		case <-time.After(20 * time.Second):
			t.Error("serve still running 20s after cleanup cancelled it")
		}
	})
	timeout := time.After(15 * time.Second)
	for {
		select {
		case rec := <-logs.lines:
			msg, _ := rec["msg"].(string)
			addr, _ := rec["addr"].(string)
			if strings.HasPrefix(msg, "listening on ") && addr != "" {
				if msg != "listening on "+addr {
					t.Errorf("listen log msg %q does not name addr %q", msg, addr)
				}
				return "http://" + addr, logs, cancel, result
			}
		case err := <-result:
			t.Fatalf("serve exited before listening: %v\nlogs:\n%s", err, logs)
		case <-timeout:
			t.Fatalf("serve did not log its listen address\nlogs:\n%s", logs)
		}
	}
}

func request(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" || (method != http.MethodGet && method != http.MethodHead) {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	validateServeResponse(t, req, resp.StatusCode, resp.Header, b)
	return resp.StatusCode, string(b)
}

const testBuildID = "550e8400-e29b-41d4-a716-446655440000"

const testDoc = `{"buildId":"550e8400-e29b-41d4-a716-446655440000","projectId":"test-project-001",` +
	`"platforms":["android"],"status":"IN_PROGRESS","platformResults":{"android":{"platform":"android",` +
	`"status":"SUCCESS","progress":100,"logUrl":null,"downloadUrl":"550e8400.../android/app.apk",` +
	`"errorMessage":null,"startedAt":"2025-11-09T10:30:00","completedAt":"2025-11-09T10:35:00"}},` +
	`"estimatedTime":15,"createdAt":"2025-11-09T10:30:00","updatedAt":"2025-11-09T10:33:00"}`

func TestServe_MemoryBackendServesAndShutsDownCleanly(t *testing.T) {
	base, logs, stop, done := startServe(t)

	status, body := request(t, http.MethodPut, base+"/v1/builds/"+testBuildID, testDoc)
	if status != http.StatusOK {
		t.Fatalf("PUT = %d %s", status, body)
	}
	status, body = request(t, http.MethodGet, base+"/v1/builds/"+testBuildID, "")
	if status != http.StatusOK || body != testDoc {
		t.Fatalf("GET = %d\n got %s\nwant %s", status, body, testDoc)
	}
	if status, body = request(t, http.MethodGet, base+"/readyz", ""); status != http.StatusOK {
		t.Fatalf("readyz = %d %s", status, body)
	}

	// An open event stream must not hold shutdown up until the shutdown timeout.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/builds/"+testBuildID+"/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("events Content-Type = %q", ct)
	}
	first, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.HasPrefix(first, "event: snapshot") && !strings.HasPrefix(first, "id:") {
		t.Fatalf("first stream line %q, %v", first, err)
	}

	start := time.Now()
	stop() // what SIGTERM does
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve returned %v after shutdown\nlogs:\n%s", err, logs)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("serve did not stop within 10s of shutdown (open stream?)\nlogs:\n%s", logs)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("shutdown took %s with an open stream; streams should be closed at once", d)
	}
	if _, err := io.ReadAll(resp.Body); err != nil && ctx.Err() == nil {
		t.Logf("stream ended with %v", err) // ended by the server: fine either way
	}
	if !strings.Contains(logs.String(), `"msg":"stopped"`) {
		t.Errorf("no stopped log:\n%s", logs)
	}
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Error("server still accepts connections after shutdown")
	}
}

func TestServe_RefusesNonLoopbackWithoutTokens(t *testing.T) {
	root := NewRootCommand()
	root.SetArgs([]string{"serve", "--addr", "0.0.0.0:0"})
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	err := root.Execute()
	if err == nil {
		t.Fatal("serve started on 0.0.0.0 without tokens")
	}
	for _, want := range []string{"refusing to listen on 0.0.0.0:0 without auth tokens", "auth.tokens", "--addr 127.0.0.1:8080", "--insecure"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestCheckExposure(t *testing.T) {
	cases := []struct {
		addr     string
		tokens   int
		insecure bool
		ok       bool
	}{
		{"127.0.0.1:8080", 0, false, true},
		{"127.1.2.3:0", 0, false, true},
		{"[::1]:8080", 0, false, true},
		{"localhost:8080", 0, false, true},
		{"LOCALHOST:8080", 0, false, true},
		{"0.0.0.0:8080", 0, false, false},
		{":8080", 0, false, false},
		{"[::]:8080", 0, false, false},
		{"192.168.1.10:8080", 0, false, false},
		{"example.com:8080", 0, false, false},
		{"0.0.0.0:8080", 1, false, true},
		{"0.0.0.0:8080", 0, true, true},
	}
	for _, c := range cases {
		err := checkExposure(serverCfg(c.addr, c.insecure), c.tokens)
		if (err == nil) != c.ok {
			t.Errorf("checkExposure(%q, tokens=%d, insecure=%v) = %v, want ok=%v", c.addr, c.tokens, c.insecure, err, c.ok)
		}
	}
}

func TestServe_RedisUnreachableStillStarts(t *testing.T) {
	// Nothing listens on port 1; serve must start anyway, log loudly and report not ready.
	base, logs, stop, done := startServe(t, "--redis", "redis://127.0.0.1:1", "--policy", "fail-fast")
	if !strings.Contains(logs.String(), "REDIS IS UNREACHABLE AT STARTUP") {
		t.Errorf("no loud startup warning:\n%s", logs)
	}
	if status, body := request(t, http.MethodGet, base+"/readyz", ""); status != http.StatusServiceUnavailable {
		t.Errorf("readyz = %d %s, want 503", status, body)
	}
	if status, body := request(t, http.MethodGet, base+"/v1/builds/"+testBuildID, ""); status != http.StatusServiceUnavailable {
		t.Errorf("GET = %d %s, want 503 under fail-fast", status, body)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("serve returned %v", err)
	}
}
