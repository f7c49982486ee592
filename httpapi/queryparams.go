package httpapi

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/suggest"
)

// apiQueryParams maps every API operation of the OpenAPI document ("GET /v1/builds") to the query
// parameters it declares, so a request naming any other is refused (checkQuery): the document is
// the one list, and the OpenAPI tests keep it in step with the routes.
var apiQueryParams = declaredQueryParams(openAPIDocument)

// queryParams are the query parameters of one operation.
type queryParams struct {
	// names are the declared parameters, in the document's order.
	names []string
	// open is true when the operation also takes parameters of any name: a form-style exploded
	// object (the index query's conditions, one parameter per dimension code, which its handler
	// checks against the table's declaration).
	open bool
}

// declaredQueryParams reads the query parameters of every operation of doc (the generator
// declares every parameter on its operation, none on a path). Only the API (paths under /v1/ and /api/) is listed: the dashboard's files and the
// operational endpoints (/metrics, /healthz, …) stay lenient for probes and scrapers.
func declaredQueryParams(doc []byte) map[string]queryParams {
	type parameter struct {
		In      string `json:"in"`
		Name    string `json:"name"`
		Explode bool   `json:"explode"`
		Schema  struct {
			Type any `json:"type"`
		} `json:"schema"`
	}
	var d struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		panic(fmt.Sprintf("httpapi: the embedded OpenAPI document does not parse: %v", err))
	}
	out := map[string]queryParams{}
	for path, item := range d.Paths {
		if !strings.HasPrefix(path, "/v1/") && !strings.HasPrefix(path, "/api/") {
			continue
		}
		for method, raw := range item {
			var op struct {
				Parameters []parameter `json:"parameters"`
			}
			_ = json.Unmarshal(raw, &op)
			var q queryParams
			for _, p := range op.Parameters {
				switch {
				case p.In != "query":
				case p.Explode && p.Schema.Type == "object":
					q.open = true
				default:
					q.names = append(q.names, p.Name)
				}
			}
			out[strings.ToUpper(method)+" "+path] = q
		}
	}
	return out
}

// checkQuery refuses a request to the API operation pattern whose query names a parameter the
// operation does not declare (a misspelt "limt", or "page" for "current" would otherwise be
// ignored silently), or does not parse. Errors: EINVALID naming the unknown parameters, the
// nearest known one, and every parameter the operation takes.
func checkQuery(pattern string, u *url.URL) error {
	declared, ok := apiQueryParams[pattern]
	if !ok || declared.open || u.RawQuery == "" {
		return nil
	}
	known := declared.names
	values, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return redstate.Errorf(redstate.EINVALID, "the query string does not parse: %v", err)
	}
	var unknown []string
	for name := range values {
		if !slices.Contains(known, name) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	var b strings.Builder
	for i, name := range unknown {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", truncate(name))
		if near := suggest.Near(name, known); near != "" {
			fmt.Fprintf(&b, " (did you mean %q?)", near)
		}
	}
	noun := "parameter"
	if len(unknown) > 1 {
		noun = "parameters"
	}
	if len(known) == 0 {
		return redstate.Errorf(redstate.EINVALID, "unknown query %s %s: %s takes no query parameters", noun, b.String(), pattern)
	}
	return redstate.Errorf(redstate.EINVALID, "unknown query %s %s: %s takes %s", noun, b.String(), pattern, strings.Join(known, ", "))
}
