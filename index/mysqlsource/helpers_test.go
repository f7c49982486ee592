package mysqlsource_test

import (
	"bytes"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/redstate/redstate/index/mysqlsource"
)

// syncBuffer is a log sink safe for concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// logTo sends a source's log to buf.
func logTo(buf *syncBuffer) func(*mysqlsource.Options) {
	return func(o *mysqlsource.Options) { o.Logger = slog.New(slog.NewTextHandler(buf, nil)) }
}

// await polls cond every 20ms until it holds, failing after within.
func await(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
