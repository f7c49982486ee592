package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/buildstatus/redisstore"
	"github.com/redstate/redstate/buildstatus/resilientstore"
	"github.com/redstate/redstate/internal/resilience"
	"github.com/redstate/redstate/metrics"
	"github.com/redstate/redstate/redistest"
)

// redisAPI is the API over the production build store (Redis behind the breaker) on a real
// redis-server, served by an httptest server.
type redisAPI struct {
	*testAPI
	store *resilientstore.Store
	// inFlight counts the requests being served.
	inFlight atomic.Int64
}

// newRedisAPI starts redis-server and the API over it. The Redis client uses redstate's default
// read timeout (1 s), the setting under which the original listings timed out.
func newRedisAPI(t *testing.T, mutate func(*Config)) *redisAPI {
	t.Helper()
	srv := redistest.StartStandalone(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr, ReadTimeout: time.Second})
	t.Cleanup(func() { _ = client.Close() })
	primary, err := redisstore.New(client, redisstore.Options{Keys: buildstatus.NewKeys("heavy-", ""), TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = primary.Close() })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	store, err := resilientstore.New(primary, nil, resilience.Options{Policy: resilience.PolicyFailFast}, metrics.New(), log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	reg := prometheus.NewRegistry()
	cfg := Config{Logger: log, Registerer: reg, Gatherer: reg}
	if mutate != nil {
		mutate(&cfg)
	}
	h, err := New(cfg, Deps{Builds: store})
	if err != nil {
		t.Fatal(err)
	}
	a := &redisAPI{store: store}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.inFlight.Add(1)
		defer a.inFlight.Add(-1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	a.testAPI = &testAPI{t: t, srv: hs, reg: reg}
	return a
}

// largeDocJSON is a valid build document of about size bytes (a long error message).
func largeDocJSON(id, project string, size int) string {
	return `{"buildId":"` + id + `","projectId":"` + project + `","platforms":["android"],"status":"FAILED",` +
		`"platformResults":{"android":{"platform":"android","status":"FAILED","progress":100,"logUrl":null,` +
		`"downloadUrl":null,"errorMessage":"` + strings.Repeat("e", size) + `","startedAt":"2025-11-09T10:30:00","completedAt":null}},` +
		`"estimatedTime":15,"createdAt":"2025-11-09T10:30:00","updatedAt":"2025-11-09T10:33:00"}`
}

// seedLarge stores n builds of about size bytes in project through the store.
func (a *redisAPI) seedLarge(n, size int, project string) {
	a.t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 16)
	for range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			id := uuid.NewString()
			var doc buildstatus.PublishResponse
			if err := json.Unmarshal([]byte(largeDocJSON(id, project, size)), &doc); err != nil {
				errs <- err
				return
			}
			if _, err := a.store.Save(context.Background(), &doc, buildstatus.SaveOptions{}); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		a.t.Fatalf("seeding: %v", err)
	}
}

// listingBody is a decoded listing answer.
type listingBody struct {
	Builds []json.RawMessage `json:"builds"`
	Cursor string            `json:"cursor"`
	Error  string            `json:"error"`
}

// TestHeavyReads_ConcurrentLargeListingsDoNotFailWrites: 24 clients read 1,000-build pages of
// ~9 KB builds (9 MB each) at once while another client saves a build. Before the fix each
// listing was one MGET of 1,000 keys: the replies overran the Redis client's read timeout, the
// timeouts opened the breaker and the unrelated PUT was answered 503. Now pages are fetched in
// chunks of at most 100 keys, at most MaxHeavyReads (4 here) are served at once, and a heavy
// read's timeout does not count against the breaker.
func TestHeavyReads_ConcurrentLargeListingsDoNotFailWrites(t *testing.T) {
	a := newRedisAPI(t, func(c *Config) { c.MaxHeavyReads = 4; c.HeavyReadWait = time.Minute })
	const builds, size, clients = 1000, 8000, 24
	a.seedLarge(builds, size, "heavy")

	var wg sync.WaitGroup
	results := make([]string, clients)
	start := make(chan struct{})
	for i := range clients {
		path := "/v1/builds?limit=1000"
		if i%2 == 1 {
			path = "/v1/projects/heavy/builds?limit=1000"
		}
		wg.Go(func() {
			<-start
			results[i] = a.readListing(path)
		})
	}
	close(start)
	// The unrelated write lands while the listings run.
	id := uuid.NewString()
	time.Sleep(100 * time.Millisecond) // let the listings reach Redis first
	put := a.do("PUT", "/v1/builds/"+id, docJSON(id, "other"))
	wg.Wait()
	if put.status != http.StatusOK {
		t.Errorf("PUT during the listings: %d %s (breaker %s)", put.status, put.body, a.store.BreakerState())
	}
	for i, res := range results {
		if res != "" {
			t.Errorf("listing %d: %s", i, res)
		}
	}
	if st := a.store.BreakerState(); st != "closed" {
		t.Errorf("breaker %s after the listings", st)
	}
}

// readListing reads a whole page and returns "" when it holds every seeded build, else what
// went wrong.
func (a *redisAPI) readListing(path string) string {
	resp, err := http.Get(a.srv.URL + path)
	if err != nil {
		return err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "reading: " + err.Error()
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Sprintf("%d %.200s", resp.StatusCode, body)
	}
	var page listingBody
	if err := json.Unmarshal(body, &page); err != nil {
		return "decoding: " + err.Error()
	}
	if page.Error != "" || len(page.Builds) < 1000 {
		return fmt.Sprintf("%d builds, error %q, cursor %q", len(page.Builds), page.Error, page.Cursor)
	}
	return ""
}
