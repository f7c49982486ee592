// Command openapigen writes the OpenAPI 3.1 document of the HTTP API (httpapi/openapi.json),
// which redstate serve embeds and answers on GET /openapi.json.
//
// The document is generated rather than hand-written because its operations share most of
// their structure (path parameters, the error responses every route can give, the role
// extension): a table of operations and a table of schemas stay short and reviewable, where the
// JSON would repeat the same error blocks hundreds of times. Run it with
//
//	go generate ./httpapi
//
// The tests keep it honest: httpapi's TestOpenAPI_* fail when a registered route (or its role)
// is missing from or differs in the document, and every response of the httpapi tests is
// validated against it; this package's test fails when the checked-in file is not what the
// generator writes.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
)

func main() {
	out := flag.String("o", "openapi.json", "file to write the document to")
	flag.Parse()
	doc, err := render()
	if err != nil {
		fmt.Fprintln(os.Stderr, "openapigen:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, doc, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "openapigen:", err)
		os.Exit(1)
	}
}

// render returns the document as indented JSON with a final newline. Object members are
// sorted (encoding/json sorts map keys), so the output is deterministic.
func render() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(document()); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
