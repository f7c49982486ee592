package main

import (
	"bytes"
	"os"
	"testing"
)

// TestCheckedInDocumentIsCurrent fails when httpapi/openapi.json is not what the generator
// writes: run go generate ./httpapi after changing the tables.
func TestCheckedInDocumentIsCurrent(t *testing.T) {
	want, err := render()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("httpapi/openapi.json is stale: run go generate ./httpapi")
	}
}

// TestOperationIDsAreUnique checks that every operation has its own operationId (client
// generators name methods after them).
func TestOperationIDsAreUnique(t *testing.T) {
	seen := map[string]string{}
	for _, op := range operations() {
		if op.id == "" || op.summary == "" {
			t.Errorf("%s %s: needs an id and a summary", op.method, op.path)
		}
		if other, dup := seen[op.id]; dup {
			t.Errorf("operationId %s used by %s and %s %s", op.id, other, op.method, op.path)
		}
		seen[op.id] = op.method + " " + op.path
	}
}

// TestLicense_IsTheRepositorysLicense: the document names the repository's license by its SPDX
// identifier, and LICENSE is that license's text.
func TestLicense_IsTheRepositorysLicense(t *testing.T) {
	info := document()["info"].(obj)
	if l := info["license"].(obj); l["identifier"] != "Apache-2.0" {
		t.Fatalf("info.license = %v, want the SPDX identifier Apache-2.0", l)
	}
	text, err := os.ReadFile("../../LICENSE")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(text, []byte("Apache License")) || !bytes.Contains(text, []byte("Version 2.0, January 2004")) {
		t.Fatal("LICENSE is not the Apache License 2.0")
	}
}
