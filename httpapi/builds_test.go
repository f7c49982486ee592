package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func TestPutGet_RoundTripsDocumentAndETag(t *testing.T) {
	a := newTestAPI(t, nil)
	body := docJSON(buildA, "test-project-001")
	put := a.do("PUT", "/v1/builds/"+buildA, body)
	if put.status != 200 {
		t.Fatalf("PUT: %d %s", put.status, put.body)
	}
	etag := put.header.Get("ETag")
	if !strings.HasPrefix(etag, `"`) || len(etag) != 42 {
		t.Fatalf("ETag = %q", etag)
	}
	get := a.do("GET", "/v1/builds/"+buildA, "")
	if get.status != 200 || get.header.Get("ETag") != etag {
		t.Fatalf("GET: %d ETag %q", get.status, get.header.Get("ETag"))
	}
	if string(get.body) != string(put.body) {
		t.Fatalf("GET body differs from PUT answer:\n%s\n%s", get.body, put.body)
	}
	if string(get.body) != body {
		t.Fatalf("stored document is not the seed's bytes:\n%s\n%s", get.body, body)
	}
	if r := a.do("GET", "/v1/builds/"+buildA, "", "If-None-Match: "+etag); r.status != http.StatusNotModified || len(r.body) != 0 {
		t.Fatalf("conditional GET: %d %s", r.status, r.body)
	}
}

func TestPut_BuildIDFromPathAndUppercase(t *testing.T) {
	a := newTestAPI(t, nil)
	var doc map[string]any
	_ = json.Unmarshal([]byte(docJSON(buildA, "p")), &doc)
	delete(doc, "buildId")
	r := a.do("PUT", "/v1/builds/"+strings.ToUpper(buildA), mustJSON(doc))
	if r.status != 200 {
		t.Fatalf("PUT: %d %s", r.status, r.body)
	}
	if !strings.Contains(string(r.body), `"buildId":"`+buildA+`"`) {
		t.Fatalf("buildId not canonical: %s", r.body)
	}
	if a.do("GET", "/v1/builds/"+buildA, "").status != 200 {
		t.Fatal("not stored under the canonical id")
	}
}

func TestPut_BodyIDMismatch400(t *testing.T) {
	a := newTestAPI(t, nil)
	e := wantError(t, a.do("PUT", "/v1/builds/"+buildA, docJSON(buildB, "p")), 400, "invalid")
	if !strings.Contains(e.Message, "does not match") {
		t.Errorf("message = %q", e.Message)
	}
}

func TestInvalidBuildID_400AndNothingStored(t *testing.T) {
	a := newTestAPI(t, nil)
	for _, tc := range []struct{ method, path, body string }{
		{"PUT", "/v1/builds/not-a-uuid", docJSON(buildA, "p")},
		{"GET", "/v1/builds/not-a-uuid", ""},
		{"HEAD", "/v1/builds/not-a-uuid", ""},
		{"DELETE", "/v1/builds/*", ""},
		{"PATCH", "/v1/builds/x:y/platforms/ios", `{"status":"SUCCESS"}`},
		{"GET", "/v1/builds/%7Bx%7D/events", ""},
	} {
		r := a.do(tc.method, tc.path, tc.body)
		if tc.method == "HEAD" {
			if r.status != 400 {
				t.Errorf("HEAD: %d", r.status)
			}
			continue
		}
		e := wantError(t, r, 400, "invalid")
		if !strings.Contains(e.Message, "UUID") {
			t.Errorf("%s %s: message %q", tc.method, tc.path, e.Message)
		}
	}
	r := a.do("GET", "/v1/builds", "")
	if !strings.Contains(string(r.body), `"builds":[]`) {
		t.Fatalf("something was stored: %s", r.body)
	}
}

func TestPut_StrictJSON(t *testing.T) {
	a := newTestAPI(t, nil)
	good := docJSON(buildA, "p")
	cases := []struct{ name, body, want string }{
		{"unknown field", strings.Replace(good, `"status"`, `"foo":1,"status"`, 1), `json: unknown field "foo"`},
		{"trailing data", good + `{}`, "after it"},
		{"array date", strings.Replace(good, `"createdAt":"2025-11-09T10:30:00"`, `"createdAt":[2025,11,9,10,30,0]`, 1), "date-times must be ISO-8601 strings"},
		{"wrong type", strings.Replace(good, `"estimatedTime":15`, `"estimatedTime":"soon"`, 1), `$.estimatedTime must be an integer, got string`},
		{"not an object", `[1]`, "JSON object"},
		{"syntax", `{"buildId":`, "malformed JSON"},
		{"empty", ` `, "empty"},
	}
	for _, tc := range cases {
		e := wantError(t, a.do("PUT", "/v1/builds/"+buildA, tc.body), 400, "invalid")
		if !strings.Contains(e.Message, tc.want) {
			t.Errorf("%s: message %q, want it to contain %q", tc.name, e.Message, tc.want)
		}
	}
	if r := a.do("GET", "/v1/builds/"+buildA, ""); r.status != 404 {
		t.Fatalf("a rejected body was stored: %d", r.status)
	}
}

func TestPut_OversizedBody413(t *testing.T) {
	a := newTestAPI(t, func(c *Config, _ *Deps) { c.MaxBodyBytes = 512 })
	big := strings.Replace(docJSON(buildA, "p"), `"x/android/app.apk"`, `"`+strings.Repeat("x", 600)+`"`, 1)
	e := wantError(t, a.do("PUT", "/v1/builds/"+buildA, big), http.StatusRequestEntityTooLarge, "too_large")
	if !strings.Contains(e.Message, "512 bytes") {
		t.Errorf("message = %q", e.Message)
	}
}

func TestPut_NonJSONContentType415(t *testing.T) {
	a := newTestAPI(t, nil)
	wantError(t, a.do("PUT", "/v1/builds/"+buildA, docJSON(buildA, "p"), "Content-Type: text/plain"),
		http.StatusUnsupportedMediaType, EUNSUPPORTEDMEDIA)
	if r := a.do("PUT", "/v1/builds/"+buildA, docJSON(buildA, "p"), "Content-Type: application/json; charset=utf-8"); r.status != 200 {
		t.Fatalf("json with charset: %d %s", r.status, r.body)
	}
}

func TestPut_Conditional(t *testing.T) {
	a := newTestAPI(t, nil)
	etag := a.put(buildA, "p")
	wantError(t, a.do("PUT", "/v1/builds/"+buildA, docJSON(buildA, "p"), "If-None-Match: *"), 412, "precondition_failed")
	changed := strings.Replace(docJSON(buildA, "p"), "IN_PROGRESS", "SUCCESS", 1)
	r := a.do("PUT", "/v1/builds/"+buildA, changed, `If-Match: "`+etag+`"`)
	if r.status != 200 {
		t.Fatalf("If-Match current: %d %s", r.status, r.body)
	}
	wantError(t, a.do("PUT", "/v1/builds/"+buildA, docJSON(buildA, "p"), `If-Match: "`+etag+`"`), 412, "precondition_failed")
	wantError(t, a.do("PUT", "/v1/builds/"+buildB, docJSON(buildB, "p"), `If-Match: "`+etag+`"`), 404, "not_found")
	if r := a.do("PUT", "/v1/builds/"+buildB, docJSON(buildB, "p"), "If-None-Match: *"); r.status != 200 {
		t.Fatalf("create-only: %d %s", r.status, r.body)
	}
	wantError(t, a.do("PUT", "/v1/builds/"+buildA, docJSON(buildA, "other")), 409, "conflict")
}

func TestGet_Missing404(t *testing.T) {
	a := newTestAPI(t, nil)
	e := wantError(t, a.do("GET", "/v1/builds/"+buildA, ""), 404, "not_found")
	if !strings.HasPrefix(e.Message, "build not found") {
		t.Errorf("message = %q", e.Message)
	}
}

func TestHead_ETagAndTTL(t *testing.T) {
	a := newTestAPI(t, nil)
	etag := a.put(buildA, "p")
	r := a.do("HEAD", "/v1/builds/"+buildA, "")
	if r.status != 200 || len(r.body) != 0 {
		t.Fatalf("HEAD: %d %q", r.status, r.body)
	}
	if r.header.Get("ETag") != `"`+etag+`"` {
		t.Errorf("ETag = %q", r.header.Get("ETag"))
	}
	if ttl := r.header.Get("Redstate-TTL-Seconds"); ttl != "3600" && ttl != "3599" {
		t.Errorf("Redstate-TTL-Seconds = %q", ttl)
	}
	if r := a.do("HEAD", "/v1/builds/"+buildB, ""); r.status != 404 || len(r.body) != 0 {
		t.Fatalf("HEAD missing: %d %q", r.status, r.body)
	}
}

func TestDelete_WithIfMatch(t *testing.T) {
	a := newTestAPI(t, nil)
	etag := a.put(buildA, "p")
	wantError(t, a.do("DELETE", "/v1/builds/"+buildA, "", `If-Match: "stale"`), 412, "precondition_failed")
	if r := a.do("DELETE", "/v1/builds/"+buildA, "", `If-Match: "`+etag+`"`); r.status != 204 {
		t.Fatalf("DELETE: %d %s", r.status, r.body)
	}
	wantError(t, a.do("GET", "/v1/builds/"+buildA, ""), 404, "not_found")
	wantError(t, a.do("DELETE", "/v1/builds/"+buildA, ""), 404, "not_found")
}

func TestPatchPlatform(t *testing.T) {
	a := newTestAPI(t, nil)
	etag := a.put(buildA, "p")
	r := a.do("PATCH", "/v1/builds/"+buildA+"/platforms/ios", `{"status":"IN_PROGRESS","progress":50}`, `If-Match: "`+etag+`"`)
	if r.status != 200 {
		t.Fatalf("PATCH: %d %s", r.status, r.body)
	}
	var doc struct {
		Platforms       []string `json:"platforms"`
		PlatformResults map[string]struct {
			Platform string `json:"platform"`
			Progress int    `json:"progress"`
		} `json:"platformResults"`
	}
	if err := json.Unmarshal(r.body, &doc); err != nil {
		t.Fatal(err)
	}
	if ios := doc.PlatformResults["ios"]; ios.Platform != "ios" || ios.Progress != 50 || len(doc.Platforms) != 2 {
		t.Fatalf("document after PATCH: %s", r.body)
	}
	if r.header.Get("ETag") == `"`+etag+`"` || r.header.Get("ETag") == "" {
		t.Fatalf("ETag = %q", r.header.Get("ETag"))
	}
	wantError(t, a.do("PATCH", "/v1/builds/"+buildA+"/platforms/ios", `{"status":"SUCCESS"}`, `If-Match: "`+etag+`"`), 412, "precondition_failed")
	wantError(t, a.do("PATCH", "/v1/builds/"+buildA+"/platforms/ios", `{"platform":"android","status":"SUCCESS"}`), 400, "invalid")
	wantError(t, a.do("PATCH", "/v1/builds/"+buildA+"/platforms/i%20os", `{"status":"SUCCESS"}`), 400, "invalid")
	wantError(t, a.do("PATCH", "/v1/builds/"+buildB+"/platforms/ios", `{"status":"SUCCESS"}`), 404, "not_found")
}

// TestHead_IfNoneMatchIsNotModified: a conditional HEAD answers like a conditional GET (RFC
// 9110 section 13.1.2: 304 for GET and HEAD when If-None-Match matches).
func TestHead_IfNoneMatchIsNotModified(t *testing.T) {
	a := newTestAPI(t, nil)
	etag := a.put(buildA, "p")
	r := a.do("HEAD", "/v1/builds/"+buildA, "", `If-None-Match: "`+etag+`"`)
	if r.status != http.StatusNotModified || len(r.body) != 0 {
		t.Fatalf("conditional HEAD: %d %q, want 304", r.status, r.body)
	}
	if r.header.Get("ETag") != `"`+etag+`"` {
		t.Errorf("ETag = %q", r.header.Get("ETag"))
	}
	if r := a.do("HEAD", "/v1/builds/"+buildA, "", `If-None-Match: "other"`); r.status != http.StatusOK {
		t.Fatalf("HEAD with a non-matching If-None-Match: %d, want 200", r.status)
	}
}

func TestIfMatch_ListOfETags(t *testing.T) {
	a := newTestAPI(t, nil)
	put := a.do("PUT", "/v1/builds/"+buildA, docJSON(buildA, "p"))
	etag := put.header.Get("ETag")
	wantError(t, a.do("PUT", "/v1/builds/"+buildA, docJSON(buildA, "p"), `If-Match: "0000", "1111"`), http.StatusPreconditionFailed, "precondition_failed")
	if r := a.do("PUT", "/v1/builds/"+buildA, docJSON(buildA, "p"), `If-Match: "0000", `+etag); r.status != 200 {
		t.Fatalf("a list holding the current ETag: %d %s", r.status, r.body)
	}
	wantError(t, a.do("PATCH", "/v1/builds/"+buildA+"/platforms/ios", `{"status":"SUCCESS"}`, `If-Match: "0000", W/"1111"`), http.StatusPreconditionFailed, "precondition_failed")
}

// TestPatchPlatform_MergesAndClears: PATCH is a JSON merge patch of the platform's entry (issue
// 31 item 13: a PATCH without logUrl dropped it): members left out keep their values, a null
// member clears one, and an unknown member or a new platform without a status is 400.
func TestPatchPlatform_MergesAndClears(t *testing.T) {
	a := newTestAPI(t, nil)
	a.put(buildA, "p")
	patch := func(body string) map[string]any {
		t.Helper()
		r := a.do("PATCH", "/v1/builds/"+buildA+"/platforms/ios", body, "Content-Type: application/merge-patch+json")
		if r.status != 200 {
			t.Fatalf("PATCH %s: %d %s", body, r.status, r.body)
		}
		var doc struct {
			PlatformResults map[string]map[string]any `json:"platformResults"`
		}
		if err := json.Unmarshal(r.body, &doc); err != nil {
			t.Fatal(err)
		}
		return doc.PlatformResults["ios"]
	}
	patch(`{"status":"IN_PROGRESS","progress":10,"logUrl":"https://ci.example/ios/1.log","startedAt":"2026-11-28T10:00:00"}`)
	ios := patch(`{"progress":60}`)
	if ios["logUrl"] != "https://ci.example/ios/1.log" || ios["status"] != "IN_PROGRESS" || ios["progress"] != 60.0 || ios["startedAt"] == nil {
		t.Fatalf("a patch of progress changed other members: %v", ios)
	}
	ios = patch(`{"status":"SUCCESS","progress":null,"completedAt":"2026-11-28T10:05:00"}`)
	if ios["progress"] != nil || ios["status"] != "SUCCESS" || ios["logUrl"] != "https://ci.example/ios/1.log" || ios["completedAt"] == nil {
		t.Fatalf("null did not clear progress, or other members changed: %v", ios)
	}
	e := wantError(t, a.do("PATCH", "/v1/builds/"+buildA+"/platforms/ios", `{"logURL":"x"}`), 400, "invalid")
	if !strings.Contains(e.Message, "logURL") {
		t.Errorf("unknown member message: %q", e.Message)
	}
	wantError(t, a.do("PATCH", "/v1/builds/"+buildA+"/platforms/web", `{"progress":5}`), 400, "invalid")
	wantError(t, a.do("PATCH", "/v1/builds/"+buildA+"/platforms/ios", `{"progress":"half"}`), 400, "invalid")
}
