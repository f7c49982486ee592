package e2e

import (
	"net/http"
	"sync"
	"testing"

	"github.com/redstate/redstate/httpapi"
	"github.com/redstate/redstate/internal/openapicheck"
)

// apiDocument parses the API's OpenAPI document once.
var apiDocument = sync.OnceValues(func() (*openapicheck.Checker, error) {
	return openapicheck.New(httpapi.OpenAPIDocument())
})

// validateResponse checks a response of a spawned server against the OpenAPI document (see
// openapicheck.Checker.Check); a mismatch fails the test.
func validateResponse(t *testing.T, req *http.Request, status int, header http.Header, body []byte) {
	t.Helper()
	c, err := apiDocument()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Check(req, status, header, body); err != nil {
		t.Error(err)
	}
}
