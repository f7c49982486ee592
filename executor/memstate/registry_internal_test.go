package memstate

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redstate/redstate/executor"
)

// Expired specs that are never read again must not pile up: like every memory store, the
// registry sweeps them every sweepEvery writes (Redis drops them by TTL).
func TestRegistry_SweepsExpiredSpecs(t *testing.T) {
	var (
		mu  sync.Mutex
		now = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	r := NewRegistry(Options{TTL: time.Minute, Now: clock})
	put := func(i int) {
		t.Helper()
		spec := executor.TaskSpec{TaskID: fmt.Sprintf("task-%d", i), TenantID: "tenant", Stages: []string{"s"}, Handler: "h"}
		if err := r.PutSpec(t.Context(), spec); err != nil {
			t.Fatal(err)
		}
	}
	for i := range sweepEvery {
		put(i)
	}
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	for i := range sweepEvery {
		put(sweepEvery + i)
	}
	r.mu.Lock()
	n := len(r.specs)
	r.mu.Unlock()
	if n > sweepEvery {
		t.Fatalf("registry holds %d specs after %d writes, %d of them expired: expired specs are never swept", n, 2*sweepEvery, sweepEvery)
	}
}
