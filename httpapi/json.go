package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strings"

	"github.com/redstate/redstate"
)

// writeJSON answers with v encoded as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		// Only our own response types are encoded here; this is a bug.
		body, status = []byte(`{"code":"internal","message":"internal error"}`), http.StatusInternalServerError
	}
	writeRawJSON(w, status, body)
}

// writeRawJSON answers with body, which is already JSON, sent byte for byte.
func writeRawJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// decodeBody reads the request body (at most s.maxBody bytes) into dst, strictly: the
// Content-Type rule of checkContentType holds (an absent body is then 400, not 415), the
// body must be one JSON object nested at most s.maxDepth levels deep, with no unknown fields, no
// member named twice in one object, no member name that matches a field only when case is
// ignored, and nothing after it. The depth is checked first, in linear time and memory, before
// any parser recurses into the body. Errors:
// EUNSUPPORTEDMEDIA, ETOOLARGE, EINVALID, each with a message naming the problem.
func (s *server) decodeBody(w http.ResponseWriter, r *http.Request, dst any) error {
	return s.decodeBodyExcept(w, r, dst, "")
}

// decodeBodyExcept is decodeBody leaving duplicate members inside the elements of the
// top-level array member items to the caller (see checkJSONShapeExcept).
func (s *server) decodeBodyExcept(w http.ResponseWriter, r *http.Request, dst any, items string) error {
	if err := checkContentType(r); err != nil {
		return err
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return redstate.Errorf(redstate.ETOOLARGE, "request body exceeds the limit of %d bytes", s.maxBody)
		}
		return redstate.Wrap(redstate.EINVALID, err, "request body could not be read")
	}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 {
		return redstate.Errorf(redstate.EINVALID, "request body is empty; expected a JSON object")
	}
	if trimmed[0] != '{' {
		return redstate.Errorf(redstate.EINVALID, "request body must be a JSON object")
	}
	if err := checkJSONShapeExcept(trimmed, s.maxDepth, items); err != nil {
		return redstate.Errorf(redstate.EINVALID, "%s", err.Error())
	}
	if err := checkMemberCase(trimmed, reflect.TypeOf(dst), "$"); err != nil {
		return redstate.Errorf(redstate.EINVALID, "%s", err.Error())
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return redstate.Errorf(redstate.EINVALID, "%s", describeJSONError(err, trimmed))
	}
	if _, err := dec.Token(); err != io.EOF {
		return redstate.Errorf(redstate.EINVALID, "request body must hold a single JSON object; found data after it")
	}
	return nil
}

// unsupportedMedia is the error for a request body that is not declared as JSON.
func unsupportedMedia(ct string) error {
	if ct == "" {
		return redstate.Errorf(EUNSUPPORTEDMEDIA, "Content-Type must be application/json (none was sent)")
	}
	return redstate.Errorf(EUNSUPPORTEDMEDIA, "Content-Type must be application/json, got %q", truncate(ct))
}

// isJSONMediaType reports whether a Content-Type is application/json or a +json type.
func isJSONMediaType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}

// describeJSONError turns a decoding error of raw into a message for API clients, free of Go
// type names; a value of the wrong type is named by its JSON path, array indexes and map keys
// included ("$.tasks[0].contextData.n").
func describeJSONError(err error, raw []byte) string {
	if e, ok := errors.AsType[*json.SyntaxError](err); ok {
		return fmt.Sprintf("malformed JSON at byte %d: %s", e.Offset, strings.TrimPrefix(e.Error(), "json: "))
	}
	if e, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		return fmt.Sprintf("json: %s must be %s, got %s", jsonPathAt(raw, e.Offset), jsonKind(e.Type), e.Value)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "malformed JSON: unexpected end of body"
	}
	// Unknown fields ("json: unknown field \"foo\"") and date-time errors from
	// buildstatus.DateTime ("date-times must be ISO-8601 strings, ...") are already clear.
	return err.Error()
}

// jsonKind names the JSON kind a Go type is decoded from.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "a different type"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a different type"
}
