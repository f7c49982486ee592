package cli

import (
	"net/http"
	"sync"
	"testing"

	"github.com/redstate/redstate/httpapi"
	"github.com/redstate/redstate/internal/openapicheck"
)

// serveOpenAPI parses the API's OpenAPI document once.
var serveOpenAPI = sync.OnceValues(func() (*openapicheck.Checker, error) {
	return openapicheck.New(httpapi.OpenAPIDocument())
})

// validateServeResponse checks a response of a served API against its OpenAPI document (see
// openapicheck.Checker.Check); a mismatch fails the test.
func validateServeResponse(t *testing.T, req *http.Request, status int, header http.Header, body []byte) {
	t.Helper()
	c, err := serveOpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Check(req, status, header, body); err != nil {
		t.Error(err)
	}
}
