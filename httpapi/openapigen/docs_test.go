package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// operationFigureRE finds figures such as "55 operations" (or routes, endpoints) in prose,
// also when the line breaks between the number and the word.
var operationFigureRE = regexp.MustCompile(`\b(\d+)\s+(operations|routes|endpoints)\b`)

// TestDocsOperationCountsMatchTheDocument: every "N operations" figure in README.md and
// docs/*.md is the number of operations of the generated document, and docs/openapi.md states
// it (a hand-kept figure once said 44 when the document had 55).
func TestDocsOperationCountsMatchTheDocument(t *testing.T) {
	raw, err := render()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, item := range doc.Paths {
		for key := range item {
			switch key {
			case "get", "put", "post", "delete", "options", "head", "patch", "trace":
				want++
			}
		}
	}
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	inOpenAPIDoc := 0
	for _, path := range append(docs, "../../README.md") {
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range operationFigureRE.FindAllStringSubmatch(string(text), -1) {
			if n, _ := strconv.Atoi(m[1]); n != want {
				t.Errorf("%s says %q; the generated document has %d operations", path, m[0], want)
			}
			if filepath.Base(path) == "openapi.md" {
				inOpenAPIDoc++
			}
		}
	}
	if inOpenAPIDoc == 0 {
		t.Errorf("docs/openapi.md no longer states the number of operations (%d); say it, or drop this test", want)
	}
}
