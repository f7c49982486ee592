package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/licensecheck"
)

// module is one dependency linked into a binary, with its license.
type module struct {
	path, version, dir string
	// binaries are the commands that link it.
	binaries []string
	// license is the SPDX identifiers of its license file, " AND "-joined; "" when unknown.
	license string
	// problem says why the license is not acceptable; "" when it is.
	problem string
}

// listModules returns the modules the packages of binaries link, but the main module, sorted by
// path, each with its license classified. It runs `go list` in root.
func listModules(root string, binaries []string) ([]*module, error) {
	byPath := map[string]*module{}
	for _, bin := range binaries {
		cmd := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{if not .Main}}{{.Path}}\t{{.Version}}\t{{.Dir}}{{end}}{{end}}", bin)
		cmd.Dir = root
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("go list %s: %v: %s", bin, err, stderr.String())
		}
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			f := strings.Split(sc.Text(), "\t")
			if len(f) != 3 {
				continue
			}
			m := byPath[f[0]]
			if m == nil {
				m = &module{path: f[0], version: f[1], dir: f[2]}
				byPath[f[0]] = m
			}
			if !slices.Contains(m.binaries, filepath.Base(bin)) {
				m.binaries = append(m.binaries, filepath.Base(bin))
			}
		}
	}
	mods := make([]*module, 0, len(byPath))
	for _, m := range byPath {
		m.classify()
		mods = append(mods, m)
	}
	slices.SortFunc(mods, func(a, b *module) int { return strings.Compare(a.path, b.path) })
	return mods, nil
}

// noticeLicenses are the licenses whose only requirement is to pass on a notice (or nothing):
// a module under one of them needs no review. licensecheck v0.3.1 identifies licenses but does
// not type most of them, so the list is ours.
var noticeLicenses = []string{
	"0BSD", "Apache-2.0", "BSD-2-Clause", "BSD-2-Clause-FreeBSD", "BSD-3-Clause", "BSL-1.0",
	"CC0-1.0", "ISC", "MIT", "MIT-0", "Unlicense", "Zlib",
}

// reviewed are dependencies whose license is more than a notice, each accepted after a review
// that the reason records; the table shows the reason.
var reviewed = map[string]string{
	"github.com/go-sql-driver/mysql": "MPL-2.0 is file-level (weak) copyleft: redstate links the module unmodified, " +
		"so the obligation is that its source stays available under MPL-2.0, which it is at the listed version; " +
		"the MySQL/MariaDB driver of database/sql has no permissively licensed equivalent (see the table above)",
}

// licenseFileNames are the names a module's license file goes by, in order of preference.
var licenseFileNames = []string{"LICENSE", "LICENSE.txt", "LICENSE.md", "LICENCE", "COPYING", "COPYING.txt"}

// classify sets m's license and problem from its license file.
func (m *module) classify() {
	text, name := readFirst(m.dir, licenseFileNames)
	if text == nil {
		m.problem = "no license file (" + strings.Join(licenseFileNames, ", ") + ")"
		return
	}
	cov := licensecheck.Scan(text)
	var ids []string
	for _, match := range cov.Match {
		if !slices.Contains(ids, match.ID) {
			ids = append(ids, match.ID)
		}
		if !slices.Contains(noticeLicenses, match.ID) && reviewed[m.path] == "" {
			m.problem = fmt.Sprintf("%s is %s, not a notice license (copyleft, or not reviewed): it needs a decision", name, match.ID)
		}
	}
	m.license = strings.Join(ids, " AND ")
	if m.problem == "" && (len(ids) == 0 || cov.Percent < 75) {
		m.problem = fmt.Sprintf("%s is not a recognised license (%.0f%% matched %q)", name, cov.Percent, m.license)
	}
}

// readFirst returns the text and name of the first of names present in dir.
func readFirst(dir string, names []string) ([]byte, string) {
	for _, n := range names {
		if b, err := os.ReadFile(filepath.Join(dir, n)); err == nil {
			return b, n
		}
	}
	return nil, ""
}

// checkAll returns an error listing every module whose license is not acceptable.
func checkAll(mods []*module) error {
	var problems []string
	for _, m := range mods {
		if m.problem != "" {
			problems = append(problems, fmt.Sprintf("%s %s: %s", m.path, m.version, m.problem))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("licenses that need a decision:\n  %s", strings.Join(problems, "\n  "))
	}
	return nil
}
