package httpapi

import (
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redstate/redstate/buildstatus/memstore"
)

// TestQuery_UnknownParameterRefused: a query parameter the operation does not declare is a 400
// naming it, the nearest known one and every known one, instead of being ignored ("?limt=5"
// listed with the default limit, "?page=2" on the feed answered page 1).
func TestQuery_UnknownParameterRefused(t *testing.T) {
	a := newTestAPI(t, nil)
	cases := []struct {
		path string
		want []string
	}{
		{"/v1/builds?limt=5", []string{`unknown query parameter "limt" (did you mean "limit"?)`, "GET /v1/builds takes ids, cursor, limit"}},
		{"/v1/feed/users/1/authors/2/posts?readStatus=ALL&page=2&size=2", []string{`unknown query parameter "page":`, "readStatus, size, current, cursor"}},
		{"/v1/builds/" + uuidN(1) + "?verbose=1&pretty", []string{`unknown query parameters "pretty", "verbose":`, "takes no query parameters"}},
		{"/v1/builds?limit=%zz", []string{"the query string does not parse"}},
	}
	for _, c := range cases {
		e := wantError(t, a.do("GET", c.path, ""), 400, "invalid")
		for _, w := range c.want {
			if !strings.Contains(e.Message, w) {
				t.Errorf("GET %s: message %q lacks %q", c.path, e.Message, w)
			}
		}
	}
}

// TestQuery_DeclaredParametersAndOperationalEndpointsPass: declared parameters are accepted, and
// the operational endpoints and the dashboard's files stay lenient (probes and scrapers add
// their own parameters).
func TestQuery_DeclaredParametersAndOperationalEndpointsPass(t *testing.T) {
	a := newTestAPI(t, nil)
	for _, path := range []string{"/v1/builds?limit=5&cursor=", "/metrics?name[]=up", "/healthz?probe=k8s", "/openapi.json?v=2"} {
		if r := a.do("GET", path, ""); r.status != 200 {
			t.Errorf("GET %s: %d %s", path, r.status, r.body)
		}
	}
}

// TestQuery_EveryAPIOperationIsListed: every route under /v1/ and /api/ has its entry (possibly
// empty) in the table read from the OpenAPI document, so none escapes the check.
func TestQuery_EveryAPIOperationIsListed(t *testing.T) {
	reg := prometheus.NewRegistry()
	h, err := New(Config{Registerer: reg, Gatherer: reg}, Deps{Builds: memstore.New(memstore.Options{TTL: time.Hour})})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range h.(*server).registered {
		path := r.pattern[strings.IndexByte(r.pattern, ' ')+1:]
		if !strings.HasPrefix(path, "/v1/") && !strings.HasPrefix(path, "/api/") {
			continue
		}
		if _, ok := apiQueryParams[r.pattern]; !ok {
			t.Errorf("route %s has no entry in the OpenAPI query parameter table", r.pattern)
		}
	}
}

// TestQuery_OpenOperationsTakeAnyName: an operation with a form-style exploded object parameter
// (the index query's conditions) takes parameters of any name; its handler checks them.
func TestQuery_OpenOperationsTakeAnyName(t *testing.T) {
	q, ok := apiQueryParams["GET /v1/index/{db}/{table}"]
	if !ok || !q.open {
		t.Fatalf("index query: %+v, %v; want an open parameter list", q, ok)
	}
	if err := checkQuery("GET /v1/index/{db}/{table}", &url.URL{RawQuery: "las=72&cat=870"}); err != nil {
		t.Fatalf("index conditions refused: %v", err)
	}
	if q := apiQueryParams["GET /v1/builds"]; q.open || !slices.Equal(q.names, []string{"ids", "cursor", "limit"}) {
		t.Fatalf("builds listing: %+v", q)
	}
}
