package main

import (
	"bytes"
	"fmt"
	"strings"
)

// docPath is the document that holds the license table, between tableBegin and tableEnd.
const (
	docPath    = "docs/dependencies.md"
	tableBegin = "<!-- licenses:begin (written by go run ./internal/licensegen) -->"
	tableEnd   = "<!-- licenses:end -->"
)

// noticeFileNames are the names of a module's NOTICE file.
var noticeFileNames = []string{"NOTICE", "NOTICE.txt", "NOTICE.md"}

// noticeText is the NOTICE file: redstate's own notice, then each dependency's NOTICE text, as
// Apache-2.0 section 4(d) asks of a redistribution.
func noticeText(mods []*module) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("redstate\nCopyright 2026 The redstate authors\n\n" +
		"This product is licensed under the Apache License, Version 2.0 (see LICENSE).\n\n" +
		"It includes software from other projects, listed with their licenses in\n" +
		"docs/dependencies.md. The NOTICE texts of those that have one follow.\n")
	for _, m := range mods {
		text, _ := readFirst(m.dir, noticeFileNames)
		if text == nil {
			continue
		}
		fmt.Fprintf(&b, "\n---- %s %s ----\n\n%s\n", m.path, m.version, strings.TrimRight(string(text), "\n"))
	}
	return b.Bytes(), nil
}

// withTable returns doc with the license table between its markers replaced by that of mods.
func withTable(doc []byte, mods []*module) ([]byte, error) {
	begin := bytes.Index(doc, []byte(tableBegin))
	end := bytes.Index(doc, []byte(tableEnd))
	if begin < 0 || end < begin {
		return nil, fmt.Errorf("%s lacks the markers %q and %q", docPath, tableBegin, tableEnd)
	}
	var b bytes.Buffer
	b.Write(doc[:begin+len(tableBegin)])
	b.WriteString("\n| module | version | license | linked into |\n|---|---|---|---|\n")
	for _, m := range mods {
		license := m.license
		if why := reviewed[m.path]; why != "" {
			license += " (reviewed: " + why + ")"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", m.path, m.version, license, strings.Join(m.binaries, ", "))
	}
	b.Write(doc[end:])
	return b.Bytes(), nil
}
