package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redstate/redstate/config"
)

// newLogger returns the structured logger configured by c, writing to w.
func newLogger(c config.Log, w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.Level)); err != nil {
		return nil, fmt.Errorf("log.level %q: %w", c.Level, err)
	}
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: durationsAsText}
	switch c.Format {
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	default:
		return nil, fmt.Errorf("log.format %q is not json or text", c.Format)
	}
}

// durationsAsText renders every time.Duration attribute as Go duration text ("1.5s"), not the
// JSON handler's integer nanoseconds.
func durationsAsText(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(a.Value.Duration().String())
	}
	return a
}

// redisLogTarget is the logger that go-redis's own messages (pool and reconnect warnings) go
// to; nil until serve sets it.
var redisLogTarget atomic.Pointer[slog.Logger]

// redisLogs forwards go-redis's printf-style log lines to redisLogTarget as structured Warn
// entries (component=go-redis), so a JSON log stream stays JSON. Before a target is set they
// go to stderr, as go-redis's default logger does.
type redisLogs struct{}

// Printf implements go-redis's internal Logging interface. While Redis is down go-redis logs
// the same dial failure on every attempt; each distinct message is logged once per
// redisLogRepeat, with the number of repeats suppressed since.
func (redisLogs) Printf(_ context.Context, format string, v ...any) {
	msg := strings.TrimSpace(fmt.Sprintf(format, v...))
	suppressed, ok := redisRepeats.admit(msg, time.Now())
	if !ok {
		return
	}
	if l := redisLogTarget.Load(); l != nil {
		if suppressed > 0 {
			l.Warn(msg, "component", "go-redis", "repeats_suppressed", suppressed)
		} else {
			l.Warn(msg, "component", "go-redis")
		}
		return
	}
	fmt.Fprintln(os.Stderr, "redis:", msg)
}

// redisLogRepeat is how often one go-redis message may be logged.
const redisLogRepeat = 30 * time.Second

// redisRepeats remembers recent go-redis messages.
var redisRepeats = &repeatFilter{every: redisLogRepeat, seen: make(map[string]*repeat)}

// repeatFilter lets a message through once per every, counting the repeats it holds back.
type repeatFilter struct {
	every time.Duration
	mu    sync.Mutex
	seen  map[string]*repeat
}

// repeat is one message's last admission and its held-back repeats since.
type repeat struct {
	at         time.Time
	suppressed int
}

// admit reports whether msg may be logged now and how many repeats were held back before it.
func (f *repeatFilter) admit(msg string, now time.Time) (suppressed int, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.seen[msg]
	if r != nil && now.Sub(r.at) < f.every {
		r.suppressed++
		return 0, false
	}
	if r == nil {
		if len(f.seen) >= 1000 {
			clear(f.seen) // bounded memory; at worst a message is logged early once
		}
		r = &repeat{}
		f.seen[msg] = r
	}
	suppressed, r.at, r.suppressed = r.suppressed, now, 0
	return suppressed, true
}
