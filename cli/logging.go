package cli

import (
	"fmt"
	"io"
	"log/slog"

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
