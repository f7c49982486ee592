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

// TestLog_FlappingBackendIsOneIncident: a backend failing and answering by turns (one Cluster
// shard down, the others answering) for 50 s logs one ERROR and one INFO, not one pair per
// turn; a failure a minute after that ERROR is logged at ERROR again with the failures since.
func TestLog_FlappingBackendIsOneIncident(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(0, 0)
	o := NewWithClock(slog.New(slog.NewTextHandler(&buf, nil)), "build status redis store", time.Minute, func() time.Time { return now })
	ctx := context.Background()
	down := errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")
	for range 100 {
		o.Failed(ctx, "build status store operation failed", down)
		now = now.Add(250 * time.Millisecond)
		o.OK(ctx)
		now = now.Add(250 * time.Millisecond)
	}
	if e, i := strings.Count(buf.String(), "level=ERROR"), strings.Count(buf.String(), "level=INFO"); e != 1 || i != 1 || strings.Count(buf.String(), "\n") != 2 {
		t.Fatalf("50 s of flapping logged %d ERROR and %d INFO lines, want 1 and 1:\n%s", e, i, buf.String())
	}
	now = now.Add(10 * time.Second)
	o.Failed(ctx, "build status store operation failed", down)
	if n := strings.Count(buf.String(), "level=ERROR"); n != 2 || !strings.Contains(buf.String(), "failuresSinceLastLine=99") {
		t.Fatalf("a failure a minute after the first ERROR: %d ERROR lines, want 2, with the 99 failures since:\n%s", n, buf.String())
	}
}
