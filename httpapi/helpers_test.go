package httpapi

import (
	"io"
	"log/slog"
	"sync"
)

// syncWriter serializes writes to w (loggers are used from server goroutines).
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// String returns what was written so far.
func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.w.(interface{ String() string }); ok {
		return st.String()
	}
	return ""
}

// loggerTo returns a debug-level text logger writing to w.
func loggerTo(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
