package outagelog

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestLog_OneLinePerStateChange(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(0, 0)
	o := NewWithClock(slog.New(slog.NewTextHandler(&buf, nil)), "queue backend", time.Minute, func() time.Time { return now })
	ctx := context.Background()
	down := errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")
	for range 50 { // 50 s of failures, one a second, from two loops
		o.Failed(ctx, "dequeue failed", down)
		o.Failed(ctx, "heartbeat failed", down)
		now = now.Add(time.Second)
	}
	if n := strings.Count(buf.String(), "\n"); n != 1 || !strings.Contains(buf.String(), "level=ERROR") {
		t.Fatalf("50 s of failures logged %d lines, want 1 ERROR:\n%s", n, buf.String())
	}
	now = now.Add(20 * time.Second)
	o.Failed(ctx, "dequeue failed", down)
	if !strings.Contains(buf.String(), "level=WARN msg=\"queue backend still unavailable: dequeue failed\"") ||
		!strings.Contains(buf.String(), "failures=100") {
		t.Fatalf("no reminder after a minute:\n%s", buf.String())
	}
	o.OK(ctx)
	o.OK(ctx)
	if n := strings.Count(buf.String(), "queue backend reachable again"); n != 1 {
		t.Fatalf("recovery logged %d times:\n%s", n, buf.String())
	}
	o.Failed(ctx, "dequeue failed", down)
	if n := strings.Count(buf.String(), "level=ERROR"); n != 2 {
		t.Fatalf("a new outage after recovery logged %d ERROR lines in all, want 2", n)
	}
}
