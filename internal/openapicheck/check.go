// Package openapicheck validates HTTP responses against redstate's OpenAPI document
// (httpapi/openapi.json). The httpapi, cli and e2e tests run every response they receive through
// it, so a handler whose answer drifts from the document fails a test. It is used by tests
// only; the server binary does not link it.
package openapicheck

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

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
)

// Doc is the part of the OpenAPI document the tests read themselves: per path and
// method, the role and the error codes of each response.
type Doc struct {
	// OpenAPI is the document's version ("3.1.0").
	OpenAPI string `json:"openapi"`
	// Paths maps each path and lower-case method to its operation.
	Paths map[string]map[string]Operation `json:"paths"`
}

// Operation is one operation of Doc.
type Operation struct {
	// Role is x-redstate-role: none, read, write or admin.
	Role string `json:"x-redstate-role"`
	// Responses maps each status to the error codes it lists (x-redstate-error-codes).
	Responses map[string]struct {
		Codes []string `json:"x-redstate-error-codes"`
	} `json:"responses"`
}

// Checker validates responses against one document.
type Checker struct {
	// Doc is the part of the document the checker reads itself.
	Doc Doc
	// mux holds one pattern per documented operation, to find the operation of a request the
	// way the server does.
	mux *http.ServeMux
	mu  sync.Mutex // the validator is not documented as safe for concurrent use
	v   validator.Validator
}

// New parses an OpenAPI document for response validation.
func New(raw []byte) (*Checker, error) {
	s := &Checker{mux: http.NewServeMux()}
	if err := json.Unmarshal(raw, &s.Doc); err != nil {
		return nil, fmt.Errorf("openapi.json: %w", err)
	}
	for path, ops := range s.Doc.Paths {
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

// Check reports a response that its operation in the document does not allow: an
// undocumented status, a body that does not match the status's schema, or an error code the
// status does not list. Requests the document has no operation for (unknown routes, 405,
// CORS preflights, HEAD served by a GET route) and redirects are not checked; neither are
// the bodies of event streams and of /metrics (not JSON).
func (s *Checker) Check(req *http.Request, status int, header http.Header, body []byte) error {
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
	var e struct {
		Code string `json:"code"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		return fmt.Errorf("%s %s → %d: error body %.300s: %v", req.Method, req.URL.Path, status, body, err)
	}
	codes := s.Doc.Paths[path][strings.ToLower(method)].Responses[strconv.Itoa(status)].Codes
	if !slices.Contains(codes, e.Code) {
		return fmt.Errorf("%s %s → %d %s: openapi.json lists only %v for this status", req.Method, req.URL.Path, status, e.Code, codes)
	}
	return nil
}
