package queue

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestOutageLog_OneLinePerStateChange(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(0, 0)
	o := newOutageLog(slog.New(slog.NewTextHandler(&buf, nil)), func() time.Time { return now })
	down := errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")
	for range 50 { // 50 s of failures, one a second, from several loops
		o.failed("dequeue", down)
		o.failed("heartbeat", down)
		now = now.Add(time.Second)
	}
	if n := strings.Count(buf.String(), "\n"); n != 1 {
		t.Fatalf("50 s of failures logged %d lines, want 1:\n%s", n, buf.String())
	}
	now = now.Add(20 * time.Second)
	o.failed("dequeue", down)
	if !strings.Contains(buf.String(), "still unavailable") || !strings.Contains(buf.String(), "failures=100") {
		t.Fatalf("no reminder after a minute:\n%s", buf.String())
	}
	o.ok()
	o.ok()
	if n := strings.Count(buf.String(), "reachable again"); n != 1 {
		t.Fatalf("recovery logged %d times:\n%s", n, buf.String())
	}
}
