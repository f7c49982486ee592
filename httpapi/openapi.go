package httpapi

import (
	"bytes"
	_ "embed" // the OpenAPI document
	"net/http"
)

//go:generate go run ./openapigen -o openapi.json

// openAPIDocument is the OpenAPI 3.1 document of every route, written by httpapi/openapigen.
// The tests fail when it and the registered routes disagree (openapi_test.go).
//
//go:embed openapi.json
var openAPIDocument []byte

// openAPI serves the document: GET /openapi.json (no role needed, so client generators can
// fetch it).
func (s *server) openAPI(w http.ResponseWriter, _ *http.Request) error {
	writeRawJSON(w, http.StatusOK, openAPIDocument)
	return nil
}

// OpenAPIDocument returns the OpenAPI 3.1 document served on GET /openapi.json.
func OpenAPIDocument() []byte { return bytes.Clone(openAPIDocument) }
