package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/report"
)

// Error codes that exist only in the HTTP layer: no store returns them. They complete the
// redstate vocabulary (redstate.EINVALID, ...) for failures that only HTTP can have.
const (
	// EMETHODNOTALLOWED: the route exists but not for the request's method. The response carries
	// an Allow header. HTTP 405.
	EMETHODNOTALLOWED = "method_not_allowed"
	// ERedirect: the request path is not canonical (for example "/v1//builds" or a "." or ".."
	// segment); the Location header holds the canonical one. HTTP 301/307/308.
	ERedirect = "redirect"
	// EUNSUPPORTEDMEDIA: a state-changing request has a body without a JSON Content-Type, or
	// declares a Content-Type other than JSON (see checkContentType). HTTP 415.
	EUNSUPPORTEDMEDIA = "unsupported_media_type"
)

// statusByCode is the one table mapping error codes to HTTP status codes. A code missing from
// it is answered as 500.
var statusByCode = map[string]int{
	redstate.EINVALID:      http.StatusBadRequest,
	redstate.ENOTFOUND:     http.StatusNotFound,
	redstate.ECONFLICT:     http.StatusConflict,
	redstate.EPRECONDITION: http.StatusPreconditionFailed,
	redstate.ETOOLARGE:     http.StatusRequestEntityTooLarge,
	redstate.EUNAUTHORIZED: http.StatusUnauthorized,
	redstate.EFORBIDDEN:    http.StatusForbidden,
	redstate.EUNAVAILABLE:  http.StatusServiceUnavailable,
	redstate.EINTERNAL:     http.StatusInternalServerError,
	EMETHODNOTALLOWED:      http.StatusMethodNotAllowed,
	EUNSUPPORTEDMEDIA:      http.StatusUnsupportedMediaType,
	EFORBIDDENORIGIN:       http.StatusForbidden,
	EHOSTNOTALLOWED:        http.StatusMisdirectedRequest,
	ETOOMANYREQUESTS:       http.StatusTooManyRequests,
}

// errorBody is the JSON body of every error response.
type errorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// BusinessCode is the seed's numeric business code (1001, 2005, 3241) when the error is a
	// *report.BusinessError; omitted otherwise.
	BusinessCode int `json:"businessCode,omitempty"`
}

// StatusOf returns the HTTP status the error code is answered with, and false for a code the
// API does not know (answered as 500). The OpenAPI generator documents error codes with it.
func StatusOf(code string) (status int, known bool) {
	status, known = statusByCode[code]
	return status, known
}

// writeError answers a request with err as a JSON error body. The status comes from
// statusByCode; internal errors are answered "internal error" and their cause is only logged.
// The error of a 503 (an unavailable store, or a client that went away) is logged with the
// request's line (see finish), not on a line of its own.
func (s *server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	code := redstate.ErrorCode(err)
	msg := redstate.ErrorMessage(err)
	status, known := statusByCode[code]
	if !known {
		status, code = http.StatusInternalServerError, redstate.EINTERNAL
	}
	info := requestInfoOf(r.Context())
	log := s.logger.With("request_id", info.id)
	switch {
	case r.Context().Err() != nil && errors.Is(err, context.Canceled):
		// The client went away; nobody reads this answer.
		status, code, msg = http.StatusServiceUnavailable, redstate.EUNAVAILABLE, "request canceled"
		info.unavailable = err
	case code == redstate.EINTERNAL:
		log.LogAttrs(r.Context(), slog.LevelError, "internal error", slog.Any("error", err))
		msg = "internal error"
	case code == redstate.EUNAVAILABLE:
		info.unavailable = err
	}
	h := w.Header()
	switch code {
	case redstate.EUNAUTHORIZED:
		h.Set("WWW-Authenticate", "Bearer")
	case redstate.EUNAVAILABLE:
		h.Set("Retry-After", "1")
	case ETOOMANYREQUESTS:
		wait := time.Second
		if d, ok := errors.AsType[retryAfter](err); ok {
			wait = time.Duration(d)
		}
		h.Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
	}
	h.Del("ETag")
	h.Del("Content-Length")
	writeJSON(w, status, errorBody{Code: code, Message: msg, BusinessCode: report.BusinessCode(err)})
}
