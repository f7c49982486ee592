package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"

	"github.com/redstate/redstate/config"
)

// newLogger returns the structured logger configured by c, writing to w.
func newLogger(c config.Log, w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.Level)); err != nil {
		return nil, fmt.Errorf("log.level %q: %w", c.Level, err)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch c.Format {
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	default:
		return nil, fmt.Errorf("log.format %q is not json or text", c.Format)
	}
}

// redisLogTarget is the logger that go-redis's own messages (pool and reconnect warnings) go
// to; nil until serve sets it.
var redisLogTarget atomic.Pointer[slog.Logger]

// redisLogs forwards go-redis's printf-style log lines to redisLogTarget as structured Warn
// entries (component=go-redis), so a JSON log stream stays JSON. Before a target is set they
// go to stderr, as go-redis's default logger does.
type redisLogs struct{}

// Printf implements go-redis's internal Logging interface.
func (redisLogs) Printf(_ context.Context, format string, v ...any) {
	msg := strings.TrimSpace(fmt.Sprintf(format, v...))
	if l := redisLogTarget.Load(); l != nil {
		l.Warn(msg, "component", "go-redis")
		return
	}
	fmt.Fprintln(os.Stderr, "redis:", msg)
}
