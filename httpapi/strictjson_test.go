package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/redstate/redstate/config"
)

// nestedObjects returns {"a":{"a":...1...}} with depth objects.
func nestedObjects(depth int) string {
	return strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth)
}

// allocatedBy returns the bytes the process allocated while fn ran (other goroutines of the test
// binary are idle, so this is fn's allocation plus noise of a few KB).
func allocatedBy(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestStrictJSON_DeepNestingIsRefusedInLinearMemory posts deeply nested bodies to POST /ui/login,
// which reads its body without a token. Before the fix the duplicate-key check kept each level's
// full path: 20,000 levels allocated about 440 MB and 100,000 levels (600 KB) exhausted memory.
// The smaller body is sent first so that the quadratic version fails the test before it can
// exhaust the machine.
func TestStrictJSON_DeepNestingIsRefusedInLinearMemory(t *testing.T) {
	a := newTestAPI(t, func(c *Config, _ *Deps) {
		c.Tokens = []config.Token{{Name: "r", Token: "reader-secret-0123456789", Roles: []string{"read"}}}
	})
	h := a.srv.Config.Handler
	for _, depth := range []int{20000, 100000} {
		body := nestedObjects(depth)
		var rec *httptest.ResponseRecorder
		alloc := allocatedBy(func() {
			req := httptest.NewRequest("POST", "/ui/login", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			rec = httptest.NewRecorder()
			h.ServeHTTP(rec, req)
		})
		t.Logf("%d levels (%d bytes): %d bytes allocated", depth, len(body), alloc)
		// Reading the body costs about twice its size; everything else must be small.
		if limit := uint64(4*len(body) + 4<<20); alloc > limit {
			t.Fatalf("%d levels: %d bytes allocated, want at most %d", depth, alloc, limit)
		}
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), `"code":"invalid"`) ||
			!strings.Contains(rec.Body.String(), "nesting deeper than 64 levels") {
			t.Fatalf("%d levels: %d %s", depth, rec.Code, rec.Body.String())
		}
	}
}

func TestStrictJSON_DepthLimitIsConfigurable(t *testing.T) {
	a := newTestAPI(t, func(c *Config, _ *Deps) {
		c.MaxJSONDepth = 3
		c.Tokens = []config.Token{{Name: "r", Token: "reader-secret-0123456789", Roles: []string{"read"}}}
	})
	// Three levels pass the depth check (and are then refused for other reasons: unknown field).
	r := a.do("POST", "/ui/login", `{"a":{"b":[1]}}`)
	if e := wantError(t, r, http.StatusBadRequest, "invalid"); strings.Contains(e.Message, "nesting") {
		t.Errorf("3 levels with a limit of 3: %q", e.Message)
	}
	e := wantError(t, a.do("POST", "/ui/login", `{"a":{"b":[[1]]}}`), http.StatusBadRequest, "invalid")
	if !strings.Contains(e.Message, "JSON nesting deeper than 3 levels at $.a.b[0]") {
		t.Errorf("4 levels with a limit of 3: %q", e.Message)
	}
	if _, err := New(Config{MaxJSONDepth: -1}, Deps{Builds: a.store}); err == nil {
		t.Error("New accepted a negative MaxJSONDepth")
	}
}

func TestStrictJSON_CheckJSONShapeIsLinear(t *testing.T) {
	// Without a binding depth limit, the walk itself must stay linear: a deep array of arrays
	// and a deep object chain each cost a few hundred bytes per level, not a path per level.
	for _, body := range []string{nestedObjects(50000), strings.Repeat("[", 50000) + strings.Repeat("]", 50000)} {
		var err error
		alloc := allocatedBy(func() { err = checkJSONShape([]byte(body), 1<<30) })
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		if alloc > 64<<20 {
			t.Errorf("%d-byte body: %d bytes allocated", len(body), alloc)
		}
	}
}

// TestJSONPathAt names the value encoding/json reports by its offset, array indexes and map keys
// included (encoding/json's own Field says "tasks.contextData" for every task and key).
func TestJSONPathAt(t *testing.T) {
	type task struct {
		ContextData map[string]string `json:"contextData"`
	}
	type plan struct {
		Tasks []task `json:"tasks"`
		N     int    `json:"n"`
	}
	for body, want := range map[string]string{
		`{"tasks":[{"contextData":{"a":"x"}},{"contextData":{"a":"x","n":5}}]}`: "$.tasks[1].contextData.n",
		`{"tasks":[{"contextData":{"a":{"deep":[1,2]}}}]}`:                      "$.tasks[0].contextData.a",
		`{"tasks":[],"n":"seven"}`:                                              "$.n",
		`{"tasks":[{"contextData":{"a":"x"}},{"contextData":[]}]}`:              "$.tasks[1].contextData",
		`{"tasks":{"contextData":{}}}`:                                          "$.tasks",
	} {
		var p plan
		err := json.Unmarshal([]byte(body), &p)
		te, ok := err.(*json.UnmarshalTypeError)
		if !ok {
			t.Fatalf("%s: %v, want a type error", body, err)
		}
		if got := jsonPathAt([]byte(body), te.Offset); got != want {
			t.Errorf("%s: path %q, want %q", body, got, want)
		}
	}
}
