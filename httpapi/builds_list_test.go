package httpapi

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// page decodes a listing page.
type testPage struct {
	Builds []struct {
		BuildID   string `json:"buildId"`
		ProjectID string `json:"projectId"`
	} `json:"builds"`
	Cursor string `json:"cursor"`
}

// uuidN returns a distinct valid UUID for n.
func uuidN(n int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", n) }

// walk follows a listing from the start and returns every build id it returned.
func (a *testAPI) walk(path string, limit int) []string {
	a.t.Helper()
	var ids []string
	cursor := ""
	for range 100 {
		r := a.do("GET", fmt.Sprintf("%s?limit=%d&cursor=%s", path, limit, url.QueryEscape(cursor)), "")
		if r.status != 200 {
			a.t.Fatalf("GET %s: %d %s", path, r.status, r.body)
		}
		var p testPage
		if err := json.Unmarshal(r.body, &p); err != nil {
			a.t.Fatal(err)
		}
		if len(p.Builds) > limit+1 {
			a.t.Fatalf("page of %d builds, limit %d", len(p.Builds), limit)
		}
		for _, b := range p.Builds {
			ids = append(ids, b.BuildID)
		}
		if p.Cursor == "" {
			return ids
		}
		cursor = p.Cursor
	}
	a.t.Fatal("listing did not end")
	return nil
}

func TestBatch_FoundAndMissing(t *testing.T) {
	a := newTestAPI(t, nil)
	a.put(buildA, "p")
	a.put(buildB, "p")
	r := a.do("GET", "/v1/builds?ids="+strings.ToUpper(buildA)+","+buildC+",%20"+buildB+","+buildA, "")
	if r.status != 200 {
		t.Fatalf("batch: %d %s", r.status, r.body)
	}
	var body struct {
		Builds  map[string]json.RawMessage `json:"builds"`
		Missing []string                   `json:"missing"`
	}
	if err := json.Unmarshal(r.body, &body); err != nil {
		t.Fatal(err)
	}
	if len(body.Builds) != 2 || body.Builds[buildA] == nil || body.Builds[buildB] == nil {
		t.Fatalf("builds: %s", r.body)
	}
	if !slices.Equal(body.Missing, []string{buildC}) {
		t.Fatalf("missing = %v", body.Missing)
	}
	if r := a.do("GET", "/v1/builds?ids="+buildC, ""); !strings.Contains(string(r.body), `"builds":{}`) {
		t.Fatalf("all missing: %s", r.body)
	}
}

func TestBatch_Invalid(t *testing.T) {
	a := newTestAPI(t, nil)
	e := wantError(t, a.do("GET", "/v1/builds?ids="+buildA+",nope", ""), 400, "invalid")
	if !strings.Contains(e.Message, `"nope"`) {
		t.Errorf("message = %q", e.Message)
	}
	wantError(t, a.do("GET", "/v1/builds?ids=", ""), 400, "invalid")
	wantError(t, a.do("GET", "/v1/builds?ids="+buildA+"&limit=5", ""), 400, "invalid")
	many := make([]string, 1001)
	for i := range many {
		many[i] = uuidN(i)
	}
	e = wantError(t, a.do("GET", "/v1/builds?ids="+strings.Join(many, ","), ""), 400, "invalid")
	if !strings.Contains(e.Message, "1000") {
		t.Errorf("message = %q", e.Message)
	}
}

func TestList_PaginatesEverything(t *testing.T) {
	a := newTestAPI(t, nil)
	var want []string
	for i := range 7 {
		want = append(want, uuidN(i))
		a.put(uuidN(i), fmt.Sprintf("p%d", i%2))
	}
	got := a.walk("/v1/builds", 3)
	slices.Sort(got)
	got = slices.Compact(got)
	if !slices.Equal(got, want) {
		t.Fatalf("listed %v, want %v", got, want)
	}
	wantError(t, a.do("GET", "/v1/builds?limit=ten", ""), 400, "invalid")
	wantError(t, a.do("GET", "/v1/builds?limit=1001", ""), 400, "invalid")
	wantError(t, a.do("GET", "/v1/builds?limit=0", ""), 400, "invalid")
	wantError(t, a.do("GET", "/v1/builds?cursor=garbage!", ""), 400, "invalid")
}

func TestListProject_HostileProjectIDs(t *testing.T) {
	a := newTestAPI(t, nil)
	projects := []string{"*", "a:b", "{x}", "a/b", "a", "b", "项目 1", "%2F"}
	n := 0
	want := map[string][]string{}
	for _, p := range projects {
		for range 3 {
			id := uuidN(n)
			n++
			a.put(id, p)
			want[p] = append(want[p], id)
		}
	}
	for _, p := range projects {
		got := a.walk("/v1/projects/"+url.PathEscape(p)+"/builds", 2)
		slices.Sort(got)
		if !slices.Equal(got, want[p]) {
			t.Errorf("project %q: listed %v, want %v", p, got, want[p])
		}
	}
	// "a/b" must be sent escaped; unescaped it is another path.
	wantError(t, a.do("GET", "/v1/projects/a/b/builds", ""), 404, "not_found")
	wantError(t, a.do("GET", "/v1/projects/x/builds?limit=-1", ""), 400, "invalid")
	if r := a.do("GET", "/v1/projects/nobody/builds", ""); r.status != 200 || string(r.body) != `{"builds":[],"cursor":""}` {
		t.Fatalf("empty project: %d %s", r.status, r.body)
	}
}
