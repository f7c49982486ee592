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
	got, err := os.ReadFile("../../httpapi/openapi.json")
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
