package main

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/httpapi"
)

// operation is one route of the API as the document describes it.
type operation struct {
	method, path string
	// id is the operationId: the method name generated clients get.
	id string
	// role is the role the route is registered with: none, read, write or admin.
	role    string
	tag     string
	summary string
	desc    string
	// params describe the path parameters by name (all are strings) and the query and header
	// parameters.
	pathDesc map[string]string
	query    []obj
	headers  []obj
	// body names the component schema of the JSON request body ("" when there is none).
	body string
	// replies are the success answers.
	replies []reply
	// codes are the error codes the handler can answer, besides the ones every route of its
	// kind can (see commonCodes).
	codes []string
	// stream marks a Server-Sent Events route (its stream limit can answer 429).
	stream bool
}

// reply is a success answer.
type reply struct {
	status int
	desc   string
	// schema names the component schema of a JSON body; "" for no body.
	schema string
	// raw is the media type and schema of a non-JSON body (text/event-stream, text/plain).
	rawType   string
	rawSchema obj
	headers   obj
}

// commonCodes are the error codes op can answer whatever its handler does: the host and
// origin guard and internal errors on every route; authentication (with its throttle) on
// routes that need a role; the Content-Type check on state-changing methods; body decoding
// on routes with a body; the query check (an undeclared or malformed query parameter) on the
// API's routes; the stream limits on event streams; and unavailable (a store that does not
// answer, or a request cancelled by its client) on routes that use a store.
func commonCodes(op operation) []string {
	codes := []string{httpapi.EHOSTNOTALLOWED, httpapi.EFORBIDDENORIGIN, redstate.EINTERNAL}
	if op.role != "none" {
		codes = append(codes, redstate.EUNAUTHORIZED, redstate.EFORBIDDEN, httpapi.ETOOMANYREQUESTS)
	}
	switch op.method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		codes = append(codes, httpapi.EUNSUPPORTEDMEDIA)
	}
	if op.body != "" {
		codes = append(codes, redstate.EINVALID, redstate.ETOOLARGE)
	}
	if strings.HasPrefix(op.path, "/v1/") || strings.HasPrefix(op.path, "/api/") {
		codes = append(codes, redstate.EINVALID)
	}
	if op.stream {
		codes = append(codes, httpapi.ETOOMANYREQUESTS)
	}
	return codes
}

var pathParam = regexp.MustCompile(`\{([A-Za-z]+)\}`)

// document returns the whole OpenAPI document.
func document() obj {
	paths := obj{}
	for _, op := range operations() {
		item, _ := paths[op.path].(obj)
		if item == nil {
			item = obj{}
			paths[op.path] = item
		}
		item[strings.ToLower(op.method)] = op.render()
	}
	return obj{
		"openapi": "3.1.0",
		"info": obj{
			"title":   "redstate HTTP API",
			"version": "1",
			"description": "Redis-backed state building blocks: build-status registry, queue and report flow, stage executor, CDC tag index and feed. " +
				"Every operation names the role it needs in x-redstate-role (none, read, write, admin; admin implies write, write implies read); " +
				"with no tokens configured auth is off. Errors are JSON bodies {code, message[, businessCode]} with a stable code; each error " +
				"response lists its codes in x-redstate-error-codes. Besides the answers listed per operation, any path answers 404 not_found " +
				"for an unknown route, 405 method_not_allowed (with Allow) for a known path with another method, and 301/307/308 redirect " +
				"(with Location) for a path that is not canonical. GET operations also answer HEAD unless HEAD is listed. Operations under /v1/ and /api/ " +
				"answer 400 invalid for a query parameter they do not list (naming the ones they take). See docs/openapi.md.",
			"license": obj{"name": "Apache License 2.0", "identifier": "Apache-2.0"},
		},
		"servers":  []any{obj{"url": "/"}},
		"security": []any{obj{"bearer": []any{}}},
		"tags": []any{
			obj{"name": "builds", "description": "Build-status registry."},
			obj{"name": "reports", "description": "Queue and report flow."},
			obj{"name": "queues", "description": "Queue administration."},
			obj{"name": "executor", "description": "Stage executor."},
			obj{"name": "index", "description": "CDC tag index."},
			obj{"name": "feed", "description": "Feed read/unread state."},
			obj{"name": "operations", "description": "Health, readiness, metrics and this document."},
		},
		"paths": paths,
		"components": obj{
			"schemas": schemas(),
			"securitySchemes": obj{
				"bearer": obj{"type": "http", "scheme": "bearer", "description": "A token configured in server.tokens; its roles decide what it may call."},
			},
		},
	}
}

// render returns op's Operation Object.
func (op operation) render() obj {
	out := obj{
		"operationId":     op.id,
		"summary":         op.summary,
		"tags":            []any{op.tag},
		"x-redstate-role": op.role,
	}
	if op.desc != "" {
		out["description"] = op.desc
	}
	if op.role == "none" {
		out["security"] = []any{}
	}
	var params []any
	for _, m := range pathParam.FindAllStringSubmatch(op.path, -1) {
		name := m[1]
		p := obj{"name": name, "in": "path", "required": true, "schema": obj{"type": "string"}}
		if d := op.pathDesc[name]; d != "" {
			p["description"] = d
		}
		if name == "action" {
			p["schema"] = enum(str(""), "pause", "resume", "cancel")
		}
		params = append(params, p)
	}
	for _, q := range op.query {
		q["in"] = "query"
		params = append(params, q)
	}
	for _, h := range op.headers {
		h["in"] = "header"
		params = append(params, h)
	}
	if len(params) > 0 {
		out["parameters"] = params
	}
	if op.body != "" {
		out["requestBody"] = obj{"required": true, "content": obj{"application/json": obj{"schema": ref(op.body)}}}
	}
	responses := obj{}
	for _, r := range op.replies {
		resp := obj{"description": r.desc}
		switch {
		case r.schema != "" && op.method != http.MethodHead:
			resp["content"] = obj{"application/json": obj{"schema": ref(r.schema)}}
		case r.rawType != "":
			resp["content"] = obj{r.rawType: obj{"schema": r.rawSchema}}
		}
		if r.headers != nil {
			resp["headers"] = r.headers
		}
		responses[strconv.Itoa(r.status)] = resp
	}
	byStatus := map[int][]string{}
	for _, code := range append(commonCodes(op), op.codes...) {
		st, ok := httpapi.StatusOf(code)
		if !ok {
			panic(fmt.Sprintf("openapigen: %s %s: error code %q has no status", op.method, op.path, code))
		}
		if !slices.Contains(byStatus[st], code) {
			byStatus[st] = append(byStatus[st], code)
		}
	}
	for st, codes := range byStatus {
		slices.Sort(codes)
		resp := obj{
			"description":            fmt.Sprintf("%s: %v.", http.StatusText(st), codes),
			"x-redstate-error-codes": codes,
		}
		if op.method != http.MethodHead {
			resp["content"] = obj{"application/json": obj{"schema": ref("Error")}}
		}
		if h := errorHeaders(codes); h != nil {
			resp["headers"] = h
		}
		responses[strconv.Itoa(st)] = resp
	}
	out["responses"] = responses
	return out
}

// errorHeaders are the headers error responses with codes carry.
func errorHeaders(codes []string) obj {
	h := obj{}
	for _, c := range codes {
		switch c {
		case redstate.EUNAUTHORIZED:
			h["WWW-Authenticate"] = obj{"description": "Bearer.", "schema": str("")}
		case redstate.EUNAVAILABLE, httpapi.ETOOMANYREQUESTS:
			h["Retry-After"] = obj{"description": "Seconds to wait before retrying.", "schema": obj{"type": "integer"}}
		}
	}
	if len(h) == 0 {
		return nil
	}
	return h
}
