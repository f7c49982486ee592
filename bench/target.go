package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/redisconn"
)

// Target is what a bench runs against and with how many callers: the options every bench
// shares (each bench's Options embeds it).
type Target struct {
	// Client is the Redis client shared by ours and the baseline (required).
	Client redis.UniversalClient
	// Cache is the client-side cache on the same Redis (nil: the cached operations are not
	// measured).
	Cache *redisconn.Cache
	// Redis is the configuration Client and Cache were made from, for a bench that opens a
	// second instance's cache (the staleness measurement).
	Redis redisconn.Options
	// Clients is the number of concurrent callers (default: the bench's).
	Clients int
	// Progress receives progress lines (nil: none).
	Progress io.Writer
}

// Prepare checks that t has a client (bench names the bench in the error) and sets Clients to
// clients when it is not positive.
func (t *Target) Prepare(bench string, clients int) error {
	if t.Client == nil {
		return fmt.Errorf("%s: a Redis client is required", bench)
	}
	if t.Clients <= 0 {
		t.Clients = clients
	}
	return nil
}

// Config is the load of a timed run: t's callers and progress writer, for d.
func (t Target) Config(d time.Duration) Config {
	return Config{Clients: t.Clients, Duration: d, Progress: t.Progress}
}

// Progressf writes a progress line (nowhere when t.Progress is nil).
func (t Target) Progressf(format string, args ...any) {
	if t.Progress != nil {
		fmt.Fprintf(t.Progress, format, args...)
	}
}

// Cleanup removes every key under prefix (UnlinkPrefix), within timeout even when ctx has
// ended, and reports what it removed to the progress writer. A bench defers it.
func (t Target) Cleanup(ctx context.Context, prefix string, timeout time.Duration) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	n, err := UnlinkPrefix(cctx, t.Client, prefix)
	t.Progressf("cleanup: unlinked %d keys under %s\n", n, prefix)
	if err != nil {
		t.Progressf("cleanup failed: %v\n", err)
	}
}

// Namespace returns a fresh key namespace for one run: "bench-" and 12 random hex digits.
func Namespace() string {
	ns := make([]byte, 6)
	_, _ = rand.Read(ns)
	return "bench-" + hex.EncodeToString(ns)
}

// Default sets *v to d when *v is not positive.
func Default[T int | int64 | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}
