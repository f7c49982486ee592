package httpapi

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// batchAnswer is a decoded batch response.
type batchAnswer struct {
	Builds   map[string]json.RawMessage `json:"builds"`
	Missing  []string                   `json:"missing"`
	Deferred []string                   `json:"deferred"`
}

func TestBatch_ChunkedAcrossManyIDs(t *testing.T) {
	a := newTestAPI(t, nil)
	var ids []string
	for i := range 150 {
		ids = append(ids, uuidN(i))
		if i%3 != 0 { // every third id is missing
			if r := a.do("PUT", "/v1/builds/"+uuidN(i), docJSON(uuidN(i), "p")); r.status != 200 {
				t.Fatalf("PUT: %d %s", r.status, r.body)
			}
		}
	}
	r := a.do("GET", "/v1/builds?ids="+strings.Join(ids, ","), "")
	var got batchAnswer
	if r.status != 200 || json.Unmarshal(r.body, &got) != nil {
		t.Fatalf("batch: %d %.200s", r.status, r.body)
	}
	if len(got.Builds) != 100 || len(got.Missing) != 50 || got.Deferred != nil {
		t.Fatalf("got %d builds, %d missing, %d deferred; want 100, 50, 0", len(got.Builds), len(got.Missing), len(got.Deferred))
	}
	for i, id := range ids {
		_, found := got.Builds[id]
		if found == (i%3 == 0) || (i%3 == 0) != slices.Contains(got.Missing, id) {
			t.Fatalf("id %d misplaced", i)
		}
	}
}

func TestBatch_ResponseBoundedWithDeferredIDs(t *testing.T) {
	a := newTestAPI(t, func(c *Config, _ *Deps) { c.MaxResponseBytes = 3000 })
	var ids []string
	for i := range 10 {
		ids = append(ids, uuidN(i))
		if r := a.do("PUT", "/v1/builds/"+uuidN(i), docJSON(uuidN(i), "p")); r.status != 200 {
			t.Fatalf("PUT: %d %s", r.status, r.body)
		}
	}
	r := a.do("GET", "/v1/builds?ids="+strings.Join(ids, ","), "")
	var got batchAnswer
	if r.status != 200 || json.Unmarshal(r.body, &got) != nil {
		t.Fatalf("batch: %d %.300s", r.status, r.body)
	}
	if len(got.Builds) == 0 || len(got.Deferred) == 0 || len(got.Builds)+len(got.Deferred) != 10 {
		t.Fatalf("%d builds and %d deferred of 10", len(got.Builds), len(got.Deferred))
	}
	if len(r.body) > 3000+len(`,"missing":[],"deferred":[]}`)+37*len(got.Deferred) {
		t.Fatalf("response of %d bytes passes the 3000-byte bound by more than the id lists", len(r.body))
	}
	// Deferred ids are the tail of the request, in order, and asking again returns them.
	if !slices.Equal(got.Deferred, ids[len(got.Builds):]) {
		t.Fatalf("deferred %v, want the request's tail", got.Deferred)
	}
	r = a.do("GET", "/v1/builds?ids="+strings.Join(got.Deferred, ","), "")
	var again batchAnswer
	if json.Unmarshal(r.body, &again) != nil || len(again.Builds) == 0 {
		t.Fatalf("re-asking the deferred ids: %.200s", r.body)
	}
}
