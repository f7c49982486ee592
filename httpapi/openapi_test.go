package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"

	"github.com/redstate/redstate/buildstatus/memstore"
	"github.com/redstate/redstate/config"
	"github.com/redstate/redstate/internal/openapicheck"
)

// registeredRoutes returns "METHOD path" → role of every route New registers.
func registeredRoutes(t *testing.T) map[string]string {
	t.Helper()
	store := memstore.New(memstore.Options{})
	t.Cleanup(func() { _ = store.Close() })
	h, err := New(Config{}, Deps{Builds: store})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range h.(*server).registered {
		if _, dup := out[r.pattern]; dup {
			t.Fatalf("pattern %q registered twice", r.pattern)
		}
		out[r.pattern] = r.role.String()
	}
	return out
}

// documentedRoutes returns "METHOD path" → x-redstate-role of every operation in doc.
func documentedRoutes(t *testing.T, doc openapicheck.Doc) map[string]string {
	t.Helper()
	out := map[string]string{}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			out[strings.ToUpper(method)+" "+path] = op.Role
		}
	}
	return out
}

// routeMismatches lists the differences between the registered and the documented routes.
func routeMismatches(registered, documented map[string]string) []string {
	var out []string
	for pattern, role := range registered {
		switch doc, ok := documented[pattern]; {
		case !ok:
			out = append(out, "registered but not in openapi.json: "+pattern)
		case doc != role:
			out = append(out, "role of "+pattern+": registered "+role+", openapi.json says "+doc)
		}
	}
	for pattern := range documented {
		if _, ok := registered[pattern]; !ok {
			out = append(out, "in openapi.json but not registered: "+pattern)
		}
	}
	slices.Sort(out)
	return out
}

// TestOpenAPI_DocumentsEveryRoute fails when a registered route is missing from the
// document, the document names a route that is not registered, or the roles differ.
func TestOpenAPI_DocumentsEveryRoute(t *testing.T) {
	spec, err := loadOpenAPISpec()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range routeMismatches(registeredRoutes(t), documentedRoutes(t, spec.Doc)) {
		t.Error(m)
	}
}

// TestOpenAPI_RouteCheckFindsDifferences checks that the comparison catches each kind of
// difference, so TestOpenAPI_DocumentsEveryRoute cannot pass by accident.
func TestOpenAPI_RouteCheckFindsDifferences(t *testing.T) {
	registered := map[string]string{"GET /a": "read", "POST /b": "write", "GET /c": "none"}
	documented := map[string]string{"GET /a": "read", "POST /b": "admin", "GET /d": "none"}
	got := routeMismatches(registered, documented)
	want := []string{
		"in openapi.json but not registered: GET /d",
		"registered but not in openapi.json: GET /c",
		"role of POST /b: registered write, openapi.json says admin",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("mismatches = %q, want %q", got, want)
	}
}

// TestOpenAPI_ErrorCodesHaveTheirStatus checks that every documented error response lists
// only codes the API answers with that status (statusByCode).
func TestOpenAPI_ErrorCodesHaveTheirStatus(t *testing.T) {
	spec, err := loadOpenAPISpec()
	if err != nil {
		t.Fatal(err)
	}
	for path, ops := range spec.Doc.Paths {
		for method, op := range ops {
			for status, resp := range op.Responses {
				n, _ := strconv.Atoi(status)
				if n >= 400 && len(resp.Codes) == 0 {
					t.Errorf("%s %s: response %s lists no error codes", method, path, status)
				}
				for _, code := range resp.Codes {
					if statusByCode[code] != n {
						t.Errorf("%s %s: response %s lists %s, which is answered %d", method, path, status, code, statusByCode[code])
					}
				}
			}
		}
	}
}

// TestOpenAPI_DocumentIsValid checks the document against the OpenAPI 3.1 schema.
func TestOpenAPI_DocumentIsValid(t *testing.T) {
	doc, err := libopenapi.NewDocument(openAPIDocument)
	if err != nil {
		t.Fatal(err)
	}
	if v := doc.GetVersion(); v != "3.1.0" {
		t.Fatalf("openapi version %q, want 3.1.0", v)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		for _, e := range verrs {
			t.Errorf("%s: %s", e.Message, e.Reason)
			for _, se := range e.SchemaValidationErrors {
				t.Errorf("  %s: %s", se.FieldPath, se.Reason)
			}
		}
	}
}

// TestOpenAPI_ServedWithoutToken checks that GET /openapi.json answers the embedded document
// even when tokens are configured.
func TestOpenAPI_ServedWithoutToken(t *testing.T) {
	a := newTestAPI(t, func(c *Config, _ *Deps) {
		c.Tokens = []config.Token{{Name: "r", Token: "secret", Roles: []string{"read"}}}
	})
	r := a.do(http.MethodGet, "/openapi.json", "")
	if r.status != http.StatusOK {
		t.Fatalf("status = %d (body %.200s)", r.status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type = %q", ct)
	}
	if !bytes.Equal(r.body, openAPIDocument) {
		t.Fatal("body is not the embedded document")
	}
	var doc openapicheck.Doc
	if err := json.Unmarshal(r.body, &doc); err != nil || doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi = %q, err %v", doc.OpenAPI, err)
	}
}
