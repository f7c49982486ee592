package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/redstate/redstate/buildstatus"
)

// blockingList is a store whose List waits for release (and signals entered) before listing.
type blockingList struct {
	buildstatus.Store
	entered chan struct{}
	release chan struct{}
}

func (b *blockingList) List(ctx context.Context, cursor string, limit int) (*buildstatus.Page, error) {
	b.entered <- struct{}{}
	<-b.release
	return b.Store.List(ctx, cursor, limit)
}

// TestHeavyReads_LimitAnswers429WhenFull: with one heavy-read slot, taken by a listing of 101
// builds that the store holds up, a second such listing waits HeavyReadWait and is refused with
// 429 too_many_requests and Retry-After, while a default page (100 builds, not heavy) is served.
func TestHeavyReads_LimitAnswers429WhenFull(t *testing.T) {
	var bl *blockingList
	a := newTestAPI(t, func(c *Config, d *Deps) {
		c.MaxHeavyReads = 1
		c.HeavyReadWait = 50 * time.Millisecond
		bl = &blockingList{Store: d.Builds, entered: make(chan struct{}, 100), release: make(chan struct{})}
		d.Builds = bl
	})
	a.put(buildA, "p")
	released := false
	release := func() {
		if !released {
			released = true
			close(bl.release)
		}
	}
	t.Cleanup(release)
	first := make(chan response, 1)
	go func() { first <- a.do("GET", "/v1/builds?limit=101", "") }()
	<-bl.entered
	second := make(chan response, 1)
	go func() { second <- a.do("GET", "/v1/builds?limit=1000", "") }()
	var r response
	select {
	case r = <-second:
	case <-bl.entered:
		t.Fatal("a second heavy listing reached the store while the only heavy-read slot was taken")
	}
	e := wantError(t, r, http.StatusTooManyRequests, ETOOMANYREQUESTS)
	if r.header.Get("Retry-After") != "1" {
		t.Errorf("Retry-After = %q", r.header.Get("Retry-After"))
	}
	t.Logf("refused: %s", e.Message)
	light := make(chan response, 1)
	go func() { light <- a.do("GET", "/v1/builds?limit=100", "") }()
	<-bl.entered // the light listing reached the store without a slot
	release()
	if r := <-light; r.status != http.StatusOK {
		t.Errorf("light listing: %d %s", r.status, r.body)
	}
	if r := <-first; r.status != http.StatusOK {
		t.Errorf("first heavy listing: %d %s", r.status, r.body)
	}
	// The slot is free again.
	if r := a.do("GET", "/v1/builds?limit=1000", ""); r.status != http.StatusOK {
		t.Errorf("heavy listing after the first ended: %d %s", r.status, r.body)
	}
}

// TestListBuilds_ChunkedPagesAreComplete: pages larger than one chunk (32, then 100 builds)
// hold every build once, and a project's pages stay newest first across chunk boundaries.
func TestListBuilds_ChunkedPagesAreComplete(t *testing.T) {
	a := newTestAPI(t, nil)
	const n = 250
	want := make([]string, 0, n)
	for i := range n {
		id := uuidN(i)
		doc := fmt.Sprintf(`{"buildId":%q,"projectId":"p","platforms":[],"status":"IN_PROGRESS","platformResults":{},`+
			`"estimatedTime":null,"createdAt":"2025-11-09T10:%02d:%02d","updatedAt":null}`, id, i/60, i%60)
		if r := a.do("PUT", "/v1/builds/"+id, doc); r.status != http.StatusOK {
			t.Fatalf("PUT: %d %s", r.status, r.body)
		}
		want = append(want, id)
	}
	all := a.walk("/v1/builds", 1000)
	slices.Sort(all)
	if !slices.Equal(all, want) {
		t.Fatalf("listing of all builds: %d ids, want the %d saved once each", len(all), n)
	}
	proj := a.walk("/v1/projects/p/builds", 1000)
	newestFirst := slices.Clone(want)
	slices.Reverse(newestFirst)
	if !slices.Equal(proj, newestFirst) {
		t.Fatalf("project listing is not the %d builds newest first: %d ids", n, len(proj))
	}
	// Small pages still resume exactly.
	if got := a.walk("/v1/projects/p/builds", 7); !slices.Equal(got, newestFirst) {
		t.Fatalf("project listing by 7: %d ids", len(got))
	}
}

// TestListBuilds_PageEndsAtResponseBound: a page that would pass MaxResponseBytes ends early
// with a cursor that continues it, and following the cursors still lists every build once.
// Before, a listing page ignored the bound (only batch reads had one).
func TestListBuilds_PageEndsAtResponseBound(t *testing.T) {
	a := newTestAPI(t, func(c *Config, _ *Deps) { c.MaxResponseBytes = 40000 })
	const n = 200
	for i := range n {
		a.put(uuidN(i), "p")
	}
	r := a.do("GET", "/v1/projects/p/builds?limit=1000", "")
	var p testPage
	if err := json.Unmarshal(r.body, &p); err != nil || r.status != http.StatusOK {
		t.Fatalf("%d %v", r.status, err)
	}
	if len(p.Builds) >= n || p.Cursor == "" || len(r.body) > 40000 {
		t.Fatalf("first page: %d builds, %d bytes, cursor %q; want it cut before 40000 bytes", len(p.Builds), len(r.body), p.Cursor)
	}
	ids := a.walk("/v1/projects/p/builds", 1000)
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("build %s listed twice", id)
		}
		seen[id] = true
	}
	if len(seen) != n {
		t.Fatalf("walk listed %d builds, want %d", len(seen), n)
	}
}
