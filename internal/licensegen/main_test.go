package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestLicenses_AcceptableAndListed fails when a module linked into a binary has a license that
// is unknown or more than a notice (copyleft), or when NOTICE or the table of
// docs/dependencies.md is not what `go run ./internal/licensegen` writes.
func TestLicenses_AcceptableAndListed(t *testing.T) {
	mods, err := listModules("../..", binaries)
	if err != nil {
		t.Fatal(err)
	}
	if len(mods) < 10 {
		t.Fatalf("only %d modules listed: go list did not see the binaries' dependencies", len(mods))
	}
	if err := checkAll(mods); err != nil {
		t.Fatal(err)
	}
	notice, err := noticeText(mods)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile("../../NOTICE"); !bytes.Equal(got, notice) {
		t.Error("NOTICE is stale: run go run ./internal/licensegen")
	}
	doc, err := os.ReadFile("../../" + docPath)
	if err != nil {
		t.Fatal(err)
	}
	want, err := withTable(doc, mods)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(doc, want) {
		t.Errorf("the license table of %s is stale: run go run ./internal/licensegen", docPath)
	}
}

// TestClassify_RefusesCopyleftAndUnknown: a GPL, an LGPL and an unrecognised license file are
// problems; MIT and Apache-2.0 are not.
func TestClassify_RefusesCopyleftAndUnknown(t *testing.T) {
	apache, err := os.ReadFile("../../LICENSE")
	if err != nil {
		t.Fatal(err)
	}
	gpl, err := os.ReadFile("/usr/share/common-licenses/GPL-3")
	if err != nil {
		t.Skip("no GPL text to test with (Debian's base-files has /usr/share/common-licenses)")
	}
	lgpl, _ := os.ReadFile("/usr/share/common-licenses/LGPL-2.1")
	for name, tc := range map[string]struct {
		text    []byte
		problem string
		license string
	}{
		"apache":  {apache, "", "Apache-2.0"},
		"gpl":     {gpl, "not a notice license", "GPL-3.0"},
		"lgpl":    {lgpl, "not a notice license", "LGPL-2.1"},
		"unknown": {[]byte("You may do what the author of this file says on Tuesdays."), "not a recognised license", ""},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(dir+"/LICENSE", tc.text, 0o644); err != nil {
			t.Fatal(err)
		}
		m := &module{path: name, dir: dir}
		m.classify()
		if tc.problem == "" && m.problem != "" || !strings.Contains(m.problem, tc.problem) || !strings.HasPrefix(m.license, tc.license) {
			t.Errorf("%s: license %q problem %q; want license %q problem containing %q", name, m.license, m.problem, tc.license, tc.problem)
		}
	}
	m := &module{path: "none", dir: t.TempDir()}
	if m.classify(); !strings.Contains(m.problem, "no license file") {
		t.Errorf("a module without a license file: %q", m.problem)
	}
}
