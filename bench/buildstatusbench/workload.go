package buildstatusbench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/bench"
	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/buildstatus/redisstore"
	"github.com/redstate/redstate/redisconn"
)

// workload holds the seeded builds and the operations benchmarked on them.
type workload struct {
	opts  Options
	keys  buildstatus.Keys
	store *redisstore.Store
	// cached is a store on the same keys reading through Target.Cache (nil without it).
	cached *redisstore.Store

	ids     []string
	buildKs []string                       // keys.Build(ids[i])
	docs    []*buildstatus.PublishResponse // the seeded documents
	encoded [][]byte                       // buildstatus.Encode(docs[i]), for the raw SET

	rngs []*rand.Rand // one per client
}

// seedPlatforms are the names the seed uses first; further platforms are numbered.
var seedPlatforms = []string{"android", "ios", "h5", "wechat-mp"}

// newDoc returns a document shaped like storetest.SampleJSON with size platforms.
func newDoc(id string, i, size int, now time.Time) *buildstatus.PublishResponse {
	started := buildstatus.NewLocalDateTime(now.Add(-5 * time.Minute))
	est := int64(15)
	doc := &buildstatus.PublishResponse{
		BuildID:         id,
		ProjectID:       fmt.Sprintf("bench-project-%03d", i%100),
		Status:          "IN_PROGRESS",
		PlatformResults: make(map[string]*buildstatus.PlatformResult, size),
		EstimatedTime:   &est,
		CreatedAt:       started,
		UpdatedAt:       buildstatus.NewLocalDateTime(now),
	}
	for p := range size {
		name := fmt.Sprintf("platform-%d", p)
		if p < len(seedPlatforms) {
			name = seedPlatforms[p]
		}
		progress := 50
		url := "https://downloads.example.com/" + id + "/" + name + "/app.bin"
		doc.Platforms = append(doc.Platforms, name)
		doc.PlatformResults[name] = &buildstatus.PlatformResult{
			Platform: name, Status: "IN_PROGRESS", Progress: &progress, DownloadURL: &url, StartedAt: started,
		}
	}
	return doc
}

// seed saves opts.Builds documents through our store, opts.Clients at a time.
func (w *workload) seed(ctx context.Context) error {
	n := w.opts.Builds
	now := time.Now()
	w.ids = make([]string, n)
	w.buildKs = make([]string, n)
	w.docs = make([]*buildstatus.PublishResponse, n)
	w.encoded = make([][]byte, n)
	for i := range n {
		w.ids[i] = uuid.NewString()
		w.buildKs[i] = w.keys.Build(w.ids[i])
		w.docs[i] = newDoc(w.ids[i], i, w.opts.Size, now)
		enc, err := buildstatus.Encode(w.docs[i])
		if err != nil {
			return err
		}
		w.encoded[i] = enc
	}
	w.rngs = make([]*rand.Rand, w.opts.Clients)
	for c := range w.rngs {
		w.rngs[c] = rand.New(rand.NewPCG(uint64(c)+1, 0x9e3779b97f4a7c15))
	}
	var next atomic.Int64
	r := bench.Run(ctx, "seed", bench.Config{Clients: w.opts.Clients, Ops: int64(n), Progress: w.opts.Progress},
		func(ctx context.Context, _ int, _ int64) error {
			_, err := w.store.Save(ctx, w.docs[next.Add(1)-1], buildstatus.SaveOptions{})
			return err
		})
	if r.Errors > 0 {
		return fmt.Errorf("seeding: %d saves failed, first: %w", r.Errors, r.FirstErr)
	}
	return nil
}

func (w *workload) pick(c int) int { return w.rngs[c].IntN(len(w.ids)) }

func (w *workload) getOurs(ctx context.Context, c int, _ int64) error {
	_, err := w.store.Get(ctx, w.ids[w.pick(c)])
	return err
}

func (w *workload) getCached(ctx context.Context, c int, _ int64) error {
	_, err := w.cached.Get(ctx, w.ids[w.pick(c)])
	return err
}

func (w *workload) getRaw(ctx context.Context, c int, _ int64) error {
	return w.opts.Client.Get(ctx, w.buildKs[w.pick(c)]).Err()
}

func (w *workload) saveOurs(ctx context.Context, c int, _ int64) error {
	_, err := w.store.Save(ctx, w.docs[w.pick(c)], buildstatus.SaveOptions{})
	return err
}

func (w *workload) saveRaw(ctx context.Context, c int, _ int64) error {
	i := w.pick(c)
	return w.opts.Client.Set(ctx, w.buildKs[i], w.encoded[i], w.opts.TTL).Err()
}

// batch returns opts.Batch consecutive (wrapping) indexes from a random start.
func (w *workload) batch(c int) (start int) { return w.pick(c) }

func (w *workload) batchOurs(ctx context.Context, c int, _ int64) error {
	return w.batchOn(ctx, w.store, c)
}

func (w *workload) batchCached(ctx context.Context, c int, _ int64) error {
	return w.batchOn(ctx, w.cached, c)
}

// batchOn reads opts.Batch builds through store.GetMany.
func (w *workload) batchOn(ctx context.Context, store *redisstore.Store, c int) error {
	start, n := w.batch(c), w.opts.Batch
	ids := make([]string, n)
	for j := range n {
		ids[j] = w.ids[(start+j)%len(w.ids)]
	}
	m, err := store.GetMany(ctx, ids)
	if err == nil && len(m) != n {
		err = fmt.Errorf("GetMany found %d of %d builds", len(m), n)
	}
	return err
}

func (w *workload) batchRaw(ctx context.Context, c int, _ int64) error {
	start, n := w.batch(c), w.opts.Batch
	keys := make([]string, n)
	for j := range n {
		keys[j] = w.buildKs[(start+j)%len(w.buildKs)]
	}
	if redisconn.IsCluster(w.opts.Client) {
		// MGET cannot span slots on Cluster: the raw equivalent is one pipeline of GETs,
		// which go-redis sends as one round trip per node.
		_, err := w.opts.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, k := range keys {
				p.Get(ctx, k)
			}
			return nil
		})
		return err
	}
	return w.opts.Client.MGet(ctx, keys...).Err()
}
