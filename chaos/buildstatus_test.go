//go:build chaos

package chaos

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/buildstatus/redisstore"
	"github.com/redstate/redstate/buildstatus/storetest"
)

// Build-status load: buildWriters goroutines each keep saving new versions of their own
// buildIDsPerWriter builds; the version is stored in the document's estimatedTime.
const (
	buildWriters      = 4
	buildIDsPerWriter = 25
	buildPause        = 5 * time.Millisecond
)

// buildLoad is the build-status load model of one phase: for every build, the last version a
// Save acknowledged.
type buildLoad struct {
	store *redisstore.Store
	log   opLog

	mu    sync.Mutex
	acked map[string]int64
}

// newBuildStore returns a redisstore.Store on rdb, closed in t.Cleanup.
func newBuildStore(t *testing.T, rdb redis.UniversalClient) *redisstore.Store {
	t.Helper()
	s, err := redisstore.New(rdb, redisstore.Options{})
	if err != nil {
		t.Fatalf("redisstore.New: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func newBuildLoad(store *redisstore.Store) *buildLoad {
	return &buildLoad{store: store, acked: map[string]int64{}}
}

// run saves until ctx ends.
func (b *buildLoad) run(ctx context.Context, wg *sync.WaitGroup) {
	for w := 0; w < buildWriters; w++ {
		ids := make([]string, buildIDsPerWriter)
		for i := range ids {
			ids[i] = storetest.NewBuildID()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			version := map[string]int64{}
			for i := 0; ctx.Err() == nil; i++ {
				id := ids[i%len(ids)]
				version[id]++
				doc := storetest.SampleDoc(id, "chaos")
				v := version[id]
				doc.EstimatedTime = &v
				opCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
				_, err := b.store.Save(opCtx, doc, buildstatus.SaveOptions{})
				cancel()
				if ctx.Err() != nil {
					return // the outcome of a write cut short by the end of the phase is unknown
				}
				b.log.add(err == nil)
				if err == nil {
					b.mu.Lock()
					b.acked[id] = v
					b.mu.Unlock()
				}
				time.Sleep(buildPause)
			}
		}()
	}
}

// check reads every acknowledged build back and returns how many are missing (lost) and how
// many hold an older version than the last acknowledged one (stale).
func (b *buildLoad) check(t *testing.T) (lost, stale int) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for id, want := range b.acked {
		got, err := b.readVersion(id)
		if err != nil {
			t.Fatalf("read back build %s: %v", id, err)
		}
		switch {
		case got == 0:
			lost++
		case got < want:
			stale++
		}
	}
	return lost, stale
}

// readVersion returns the stored version of build id (0 when it does not exist), retrying
// unavailable errors for a while.
func (b *buildLoad) readVersion(id string) (int64, error) {
	deadline := time.Now().Add(failoverTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		bld, err := b.store.Get(ctx, id)
		cancel()
		if redstate.ErrorCode(err) == redstate.ENOTFOUND {
			return 0, nil
		}
		if err == nil {
			doc, err := bld.Doc()
			if err != nil {
				return 0, err
			}
			if doc.EstimatedTime == nil {
				return 0, errors.New("stored document has no estimatedTime")
			}
			return *doc.EstimatedTime, nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("still failing after %v: %w", failoverTimeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
