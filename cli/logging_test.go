package cli

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate/config"
)

func TestLogger_DurationsAsText(t *testing.T) {
	var buf bytes.Buffer
	log, err := newLogger(config.Log{Level: "info", Format: "json"}, &buf)
	if err != nil {
		t.Fatal(err)
	}
	log.Info("x", "duration", 1500*time.Millisecond, slog.Duration("delay", 10*time.Second))
	if out := buf.String(); !strings.Contains(out, `"duration":"1.5s"`) || !strings.Contains(out, `"delay":"10s"`) {
		t.Fatalf("durations not logged as text: %s", out)
	}
}

func TestRepeatFilter_OncePerIntervalWithCount(t *testing.T) {
	f := &repeatFilter{every: time.Minute, seen: map[string]*repeat{}}
	t0 := time.Unix(1000, 0)
	if n, ok := f.admit("dial tcp: refused", t0); !ok || n != 0 {
		t.Fatalf("first = %d %v", n, ok)
	}
	for i := range 5 {
		if _, ok := f.admit("dial tcp: refused", t0.Add(time.Duration(i+1)*time.Second)); ok {
			t.Fatal("a repeat within the interval was let through")
		}
	}
	if _, ok := f.admit("another message", t0.Add(time.Second)); !ok {
		t.Fatal("a different message was held back")
	}
	if n, ok := f.admit("dial tcp: refused", t0.Add(61*time.Second)); !ok || n != 5 {
		t.Fatalf("after the interval = %d %v, want 5 suppressed", n, ok)
	}
}
