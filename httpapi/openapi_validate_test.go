package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
)

// openAPIDoc is the part of the OpenAPI document the tests read themselves: per path and
// method, the role and the error codes of each response.
type openAPIDoc struct {
	OpenAPI string                                  `json:"openapi"`
	Paths   map[string]map[string]openAPIOperation `json:"paths"`
}

// openAPIOperation is one operation of openAPIDoc.
type openAPIOperation struct {
	Role      string `json:"x-redstate-role"`
	Responses map[string]struct {
		Codes []string `json:"x-redstate-error-codes"`
	} `json:"responses"`
}

// openAPISpec validates responses against the embedded document.
type openAPISpec struct {
	doc openAPIDoc
	// mux holds one pattern per documented operation, to find the operation of a request the
	// way the server does.
	mux *http.ServeMux
	mu  sync.Mutex // the validator is not documented as safe for concurrent use
	v   validator.Validator
}

// loadOpenAPISpec parses the embedded document once.
var loadOpenAPISpec = sync.OnceValues(func() (*openAPISpec, error) {
	return newOpenAPISpec(openAPIDocument)
})

// newOpenAPISpec parses an OpenAPI document for response validation.
func newOpenAPISpec(raw []byte) (*openAPISpec, error) {
	s := &openAPISpec{mux: http.NewServeMux()}
	if err := json.Unmarshal(raw, &s.doc); err != nil {
		return nil, fmt.Errorf("openapi.json: %w", err)
	}
	for path, ops := range s.doc.Paths {
		for method := range ops {
			s.mux.HandleFunc(strings.ToUpper(method)+" "+path, func(http.ResponseWriter, *http.Request) {})
		}
	}
	doc, err := libopenapi.NewDocument(raw)
	if err != nil {
		return nil, fmt.Errorf("openapi.json: %w", err)
	}
	v, errs := validator.NewValidator(doc, config.WithFormatAssertions())
	if len(errs) > 0 {
		return nil, fmt.Errorf("openapi.json: %v", errs)
	}
	s.v = v
	return s, nil
}

// checkResponse reports a response that its operation in the document does not allow: an
// undocumented status, a body that does not match the status's schema, or an error code the
// status does not list. Requests the document has no operation for (unknown routes, 405,
// CORS preflights, HEAD served by a GET route) and redirects are not checked; neither are
// the bodies of event streams and of /metrics (not JSON).
func (s *openAPISpec) checkResponse(req *http.Request, status int, header http.Header, body []byte) error {
	_, pattern := s.mux.Handler(req)
	method, path, _ := strings.Cut(pattern, " ")
	if pattern == "" || method != req.Method || status == http.StatusMovedPermanently ||
		status == http.StatusTemporaryRedirect || status == http.StatusPermanentRedirect {
		return nil
	}
	if status == http.StatusOK && (strings.HasPrefix(header.Get("Content-Type"), "text/event-stream") || path == "/metrics") {
		return nil
	}
	res := &http.Response{StatusCode: status, Header: header, Body: io.NopCloser(bytes.NewReader(body)), Request: req}
	s.mu.Lock()
	ok, verrs := s.v.ValidateHttpResponse(req, res)
	s.mu.Unlock()
	if !ok {
		var msgs []string
		for _, e := range verrs {
			msg := e.Message
			if e.Reason != "" {
				msg += ": " + e.Reason
			}
			for _, se := range e.SchemaValidationErrors {
				msg += fmt.Sprintf(" [%s: %s]", se.FieldPath, se.Reason)
			}
			msgs = append(msgs, msg)
		}
		return fmt.Errorf("%s %s → %d does not match openapi.json (%s): %s (body %.300s)",
			req.Method, req.URL.Path, status, pattern, strings.Join(msgs, "; "), body)
	}
	if status < 400 || req.Method == http.MethodHead {
		return nil
	}
	var e errorBody
	if err := json.Unmarshal(body, &e); err != nil {
		return fmt.Errorf("%s %s → %d: error body %.300s: %v", req.Method, req.URL.Path, status, body, err)
	}
	codes := s.doc.Paths[path][strings.ToLower(method)].Responses[strconv.Itoa(status)].Codes
	if !slices.Contains(codes, e.Code) {
		return fmt.Errorf("%s %s → %d %s: openapi.json lists only %v for this status", req.Method, req.URL.Path, status, e.Code, codes)
	}
	return nil
}

// validateResponse checks a response of the tests' API against openapi.json (see
// checkResponse); a mismatch fails the test.
func validateResponse(t *testing.T, req *http.Request, status int, header http.Header, body []byte) {
	t.Helper()
	spec, err := loadOpenAPISpec()
	if err != nil {
		t.Fatal(err)
	}
	if err := spec.checkResponse(req, status, header, body); err != nil {
		t.Error(err)
	}
}
