package httpapi

import (
	"net/http"
	"sync"
	"testing"

	"github.com/redstate/redstate/internal/openapicheck"
)

// loadOpenAPISpec parses the embedded document once.
var loadOpenAPISpec = sync.OnceValues(func() (*openapicheck.Checker, error) {
	return openapicheck.New(openAPIDocument)
})

// validateResponse checks a response of the tests' API against openapi.json (see
// openapicheck.Checker.Check); a mismatch fails the test.
func validateResponse(t *testing.T, req *http.Request, status int, header http.Header, body []byte) {
	t.Helper()
	spec, err := loadOpenAPISpec()
	if err != nil {
		t.Fatal(err)
	}
	if err := spec.Check(req, status, header, body); err != nil {
		t.Error(err)
	}
}
