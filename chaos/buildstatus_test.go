//go:build chaos

package chaos

import (
	"context"
	"errors"
	"fmt"
	"strconv"
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
// buildIDsPerWriter builds (the version is stored in the document's estimatedTime), and
// platformWriters goroutines, one per platform, keep updating their platform of the same
// platformBuilds builds with UpdatePlatform (the version is the platform's errorMessage), so
// concurrent updates of one build's platforms meet every fault. Re-saves overwrite what a
// failover may lose, so createWriters save new builds, each once: a build created in the
// replication-lag window and lost shows as missing.
const (
	buildWriters      = 4
	buildIDsPerWriter = 25
	buildPause        = 5 * time.Millisecond
	platformWriters   = 2
	platformBuilds    = 20
	createWriters     = 2
)

// buildStatusBlock is the build-status registry under load.
var buildStatusBlock = block{name: "buildstatus", setup: func(t *testing.T, r *run) func(int) load {
	store := newBuildStore(t, r.rdb)
	return func(int) load { return newBuildLoad(store) }
}}

// buildLoad is the build-status load model of one phase: for every build, the last version a
// Save acknowledged, and for every (build, platform) the last version an UpdatePlatform
// acknowledged.
type buildLoad struct {
	store *redisstore.Store
	log   opLog
	plog  opLog
	clog  opLog

	mu       sync.Mutex
	acked    map[string]int64
	platform map[[2]string]int
	created  []string
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
	return &buildLoad{store: store, acked: map[string]int64{}, platform: map[[2]string]int{}}
}

// start saves and updates platforms until produce ends; it has no background workers.
func (b *buildLoad) start(produce, _ context.Context, producers, _ *sync.WaitGroup) {
	b.save(produce, producers)
	b.updatePlatforms(produce, producers)
	b.create(produce, producers)
}

// settle has nothing to wait for: every write is synchronous.
func (b *buildLoad) settle(*testing.T) {}

// rows checks the saves and the platform updates.
func (b *buildLoad) rows(t *testing.T, faultAt time.Time) []row {
	s := newRow("buildstatus save")
	s.acked, s.failed = b.log.counts()
	s.lost, s.stale = b.check(t)
	s.recovery = recovered(t, &b.log, faultAt, s.block)
	p := newRow("buildstatus platform")
	p.acked, p.failed = b.plog.counts()
	p.lost, p.stale = b.checkPlatforms(t)
	p.recovery = recovered(t, &b.plog, faultAt, p.block)
	c := newRow("buildstatus create")
	c.acked, c.failed = b.clog.counts()
	c.lost = b.checkCreated(t)
	c.recovery = recovered(t, &b.clog, faultAt, c.block)
	return []row{s, p, c}
}

// create saves a new build per call until ctx ends.
func (b *buildLoad) create(ctx context.Context, wg *sync.WaitGroup) {
	for w := 0; w < createWriters; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				id := storetest.NewBuildID()
				opCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
				_, err := b.store.Save(opCtx, storetest.SampleDoc(id, "chaos-creates"), buildstatus.SaveOptions{})
				cancel()
				if ctx.Err() != nil {
					return // outcome unknown
				}
				b.clog.add(err)
				if err == nil {
					b.mu.Lock()
					b.created = append(b.created, id)
					b.mu.Unlock()
				}
				time.Sleep(buildPause)
			}
		}()
	}
}

// checkCreated returns how many acknowledged new builds are missing, reading them in batches.
func (b *buildLoad) checkCreated(t *testing.T) (lost int) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for start := 0; start < len(b.created); start += 500 {
		ids := b.created[start:min(start+500, len(b.created))]
		found, err := b.getMany(ids)
		if err != nil {
			t.Fatalf("read back created builds: %v", err)
		}
		lost += len(ids) - len(found)
	}
	return lost
}

// getMany reads ids with GetMany, retrying unavailable errors for a while.
func (b *buildLoad) getMany(ids []string) (map[string]*buildstatus.Build, error) {
	deadline := time.Now().Add(failoverTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		found, err := b.store.GetMany(ctx, ids)
		cancel()
		if err == nil {
			return found, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("still failing after %v: %w", failoverTimeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// save keeps saving new versions until ctx ends.
func (b *buildLoad) save(ctx context.Context, wg *sync.WaitGroup) {
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
				b.log.add(err)
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

// updatePlatforms saves platformBuilds builds, then keeps updating platform "p<w>" of each
// from writer w, a version counting up, until ctx ends.
func (b *buildLoad) updatePlatforms(ctx context.Context, wg *sync.WaitGroup) {
	ids := make([]string, platformBuilds)
	for i := range ids {
		ids[i] = storetest.NewBuildID()
		doc := storetest.SampleDoc(ids[i], "chaos-platforms")
		for {
			opCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
			_, err := b.store.Save(opCtx, doc, buildstatus.SaveOptions{})
			cancel()
			if err == nil || ctx.Err() != nil {
				break
			}
		}
	}
	for w := 0; w < platformWriters; w++ {
		platform := fmt.Sprintf("p%d", w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			progress := map[string]int{}
			for i := 0; ctx.Err() == nil; i++ {
				id := ids[i%len(ids)]
				progress[id]++
				v := progress[id]
				seq := strconv.Itoa(v)
				res := &buildstatus.PlatformResult{Platform: platform, Status: "IN_PROGRESS", ErrorMessage: &seq}
				opCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
				_, err := b.store.UpdatePlatform(opCtx, id, res, "")
				cancel()
				if ctx.Err() != nil {
					return // outcome unknown
				}
				b.plog.add(err)
				if err == nil {
					b.mu.Lock()
					b.platform[[2]string{id, platform}] = v
					b.mu.Unlock()
				}
				time.Sleep(buildPause)
			}
		}()
	}
}

// checkPlatforms reads every build with an acknowledged platform update back and returns how
// many acknowledged (build, platform) results are missing (lost) or hold an older version
// than the last acknowledged one (stale).
func (b *buildLoad) checkPlatforms(t *testing.T) (lost, stale int) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	docs := map[string]*buildstatus.PublishResponse{}
	for key, want := range b.platform {
		id, platform := key[0], key[1]
		doc, ok := docs[id]
		if !ok {
			var err error
			if doc, err = b.readDoc(id); err != nil {
				t.Fatalf("read back build %s: %v", id, err)
			}
			docs[id] = doc
		}
		var res *buildstatus.PlatformResult
		if doc != nil {
			res = doc.PlatformResults[platform]
		}
		if res == nil || res.ErrorMessage == nil {
			lost++
			continue
		}
		if got, err := strconv.Atoi(*res.ErrorMessage); err != nil || got < want {
			stale++
		}
	}
	return lost, stale
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
	doc, err := b.readDoc(id)
	switch {
	case err != nil:
		return 0, err
	case doc == nil:
		return 0, nil
	case doc.EstimatedTime == nil:
		return 0, errors.New("stored document has no estimatedTime")
	}
	return *doc.EstimatedTime, nil
}

// readDoc returns the stored document of build id (nil when it does not exist), retrying
// unavailable errors for a while.
func (b *buildLoad) readDoc(id string) (*buildstatus.PublishResponse, error) {
	deadline := time.Now().Add(failoverTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		bld, err := b.store.Get(ctx, id)
		cancel()
		if redstate.ErrorCode(err) == redstate.ENOTFOUND {
			return nil, nil
		}
		if err == nil {
			return bld.Doc()
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("still failing after %v: %w", failoverTimeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
