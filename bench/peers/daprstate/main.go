// Command daprstate is the peer of `redstate-bench buildstatus`'s save_vs_dapr: Dapr's Redis
// state store (github.com/dapr/components-contrib state/redis, the real library) writing build
// documents the way a build-status writer on Dapr would, timed by the bench in slices that
// alternate with redstate's own saves.
//
// It is a module of its own because components-contrib builds only with go-redis up to
// v9.16.0, while redstate's module uses a later go-redis; redstate never imports it.
//
// The bench talks to it over stdin and stdout, one JSON object per line. The first line
// configures it (setup); it answers {"ready":true} once the store is initialised, or
// {"error":"…"}. Each further line asks for a timed run ({"run_ms":N}) and gets a result line.
// It exits at the end of stdin.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dapr/components-contrib/metadata"
	"github.com/dapr/components-contrib/state"
	daprredis "github.com/dapr/components-contrib/state/redis"
	"github.com/dapr/kit/logger"
)

// setup is the first request: where Redis is, how many concurrent writers, and the documents.
type setup struct {
	// Addr is Redis's host:port; Username, Password and DB as in redis.Options.
	Addr     string `json:"addr"`
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	DB       int    `json:"db"`
	// Clients is the number of concurrent writers.
	Clients int `json:"clients"`
	// TTLSeconds is each Set's ttlInSeconds (0: none).
	TTLSeconds int `json:"ttl_seconds"`
	// Keys are the state keys; Docs[i] is written to Keys[i]. Writer c owns the keys whose
	// index is c modulo Clients and saves them in turn.
	Keys []string `json:"keys"`
	Docs []string `json:"docs"`
}

// run asks for a timed run.
type run struct {
	RunMS int64 `json:"run_ms"`
}

// result is a run's outcome: successful Sets, their latencies (nanoseconds, unsorted), the
// failures and the CPU time this process used during the run.
type result struct {
	Ops        int64   `json:"ops"`
	CPUNS      int64   `json:"cpu_ns"`
	Errors     int64   `json:"errors"`
	FirstError string  `json:"first_error,omitempty"`
	ElapsedNS  int64   `json:"elapsed_ns"`
	Latencies  []int64 `json:"latencies_ns"`
}

func main() {
	if err := serve(context.Background(), os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "daprstate:", err)
		os.Exit(1)
	}
}

// serve reads the setup and the run requests from in and answers each on out.
func serve(ctx context.Context, in io.Reader, out io.Writer) error {
	dec := json.NewDecoder(bufio.NewReader(in))
	enc := json.NewEncoder(out)
	var s setup
	if err := dec.Decode(&s); err != nil {
		return fmt.Errorf("reading the setup: %w", err)
	}
	w, err := newWriters(ctx, s)
	if err != nil {
		_ = enc.Encode(map[string]string{"error": err.Error()})
		return err
	}
	defer w.store.Close()
	if err := enc.Encode(map[string]bool{"ready": true}); err != nil {
		return err
	}
	for {
		var r run
		if err := dec.Decode(&r); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("reading a run request: %w", err)
		}
		if err := enc.Encode(w.run(ctx, time.Duration(r.RunMS)*time.Millisecond)); err != nil {
			return err
		}
	}
}

// writers are the Clients concurrent writers on one Dapr state store.
type writers struct {
	store state.Store
	s     setup
	docs  [][]byte
	// etags[i] is Keys[i]'s current ETag as this process last wrote it ("" before its first
	// write); only writer i % Clients touches it.
	etags []string
	// next[c] is the position of writer c in its keys, kept across runs.
	next []int
	ttl  map[string]string
}

func newWriters(ctx context.Context, s setup) (*writers, error) {
	if s.Clients < 1 || len(s.Keys) < s.Clients || len(s.Docs) != len(s.Keys) {
		return nil, fmt.Errorf("setup: %d clients, %d keys, %d docs: want at least one key per client and one doc per key", s.Clients, len(s.Keys), len(s.Docs))
	}
	store := daprredis.NewRedisStateStore(logger.NewLogger("daprstate"))
	props := map[string]string{
		"redisHost":     s.Addr,
		"redisUsername": s.Username,
		"redisPassword": s.Password,
		"redisDB":       strconv.Itoa(s.DB),
		// A pool at least as large as the writers, so that none waits for a connection.
		"poolSize": strconv.Itoa(max(s.Clients, 10)),
	}
	if err := store.Init(ctx, state.Metadata{Base: metadata.Base{Name: "daprstate", Properties: props}}); err != nil {
		return nil, fmt.Errorf("initialising Dapr's Redis state store: %w", err)
	}
	w := &writers{store: store, s: s, etags: make([]string, len(s.Keys)), next: make([]int, s.Clients)}
	for _, d := range s.Docs {
		w.docs = append(w.docs, []byte(d))
	}
	if s.TTLSeconds > 0 {
		w.ttl = map[string]string{"ttlInSeconds": strconv.Itoa(s.TTLSeconds)}
	}
	return w, nil
}

// set writes key i as a build-status writer on Dapr does: the first write with first-write
// concurrency and no ETag (it fails if the key exists), then each update with the ETag of the
// previous write. Dapr's Set does not return the new ETag; its Redis store's ETag is a version
// that each write increments, so the writer counts it instead of reading it back.
func (w *writers) set(ctx context.Context, i int) error {
	req := &state.SetRequest{
		Key:      w.s.Keys[i],
		Value:    w.docs[i],
		Metadata: w.ttl,
		Options:  state.SetStateOption{Concurrency: state.FirstWrite},
	}
	if w.etags[i] != "" {
		etag := w.etags[i]
		req.ETag = &etag
	}
	if err := w.store.Set(ctx, req); err != nil {
		return err
	}
	v, _ := strconv.Atoi(w.etags[i])
	w.etags[i] = strconv.Itoa(v + 1)
	return nil
}

// run runs the writers for d and returns what they did.
func (w *writers) run(ctx context.Context, d time.Duration) result {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var (
		mu       sync.Mutex
		res      result
		failed   atomic.Int64
		firstErr atomic.Value
		wg       sync.WaitGroup
	)
	start, cpu := time.Now(), processCPU()
	for c := range w.s.Clients {
		wg.Go(func() {
			own := make([]int64, 0, 4096)
			for ctx.Err() == nil {
				i := c + w.next[c]*w.s.Clients
				if i >= len(w.s.Keys) {
					w.next[c], i = 0, c
				}
				// The Set is not cut when the run ends, so that its ETag is known for the
				// writer's next Set of the key (the bench's own writers do the same).
				t0 := time.Now()
				err := w.set(context.WithoutCancel(ctx), i)
				lat := time.Since(t0)
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					w.resync(i)
					continue
				}
				w.next[c]++
				own = append(own, lat.Nanoseconds())
			}
			mu.Lock()
			res.Latencies = append(res.Latencies, own...)
			mu.Unlock()
		})
	}
	wg.Wait()
	res.ElapsedNS, res.CPUNS = time.Since(start).Nanoseconds(), processCPU()-cpu
	res.Ops = int64(len(res.Latencies))
	res.Errors = failed.Load()
	if e, ok := firstErr.Load().(string); ok {
		res.FirstError = e
	}
	return res
}

// resync reads key i's ETag back after a failed write, so that the writer goes on.
func (w *writers) resync(i int) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := w.store.Get(ctx, &state.GetRequest{Key: w.s.Keys[i]})
	if err != nil || got.ETag == nil {
		w.etags[i] = ""
		return
	}
	w.etags[i] = *got.ETag
}
