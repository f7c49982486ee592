// Command licensegen checks the licenses of every module linked into redstate's binaries and
// writes what their notices require: the NOTICE file at the repository's root (the NOTICE texts
// of Apache-2.0 dependencies, which a redistributor must pass on) and the license table of
// docs/dependencies.md. Run it from the repository's root after changing dependencies:
//
//	go run ./internal/licensegen
//
// A module whose license file is missing, not recognised by github.com/google/licensecheck, or
// under a license that asks more than a notice (GPL, LGPL, AGPL, MPL and the like: anything
// outside noticeLicenses) is an error unless it is in reviewed with the reason it was accepted:
// such a dependency needs a decision, not a silent listing. This package's test runs the same check and fails when NOTICE
// or the table is stale.
package main

import (
	"flag"
	"fmt"
	"os"
)

// binaries are the commands redstate ships (the server, and the benchmarks for those who
// measure it); their dependencies are the ones distributed.
var binaries = []string{"./cmd/redstate", "./cmd/redstate-bench"}

func main() {
	root := flag.String("root", ".", "the repository's root")
	flag.Parse()
	if err := run(*root); err != nil {
		fmt.Fprintln(os.Stderr, "licensegen:", err)
		os.Exit(1)
	}
}

// run checks the modules of the binaries of the repository at root and writes NOTICE and the
// table of docs/dependencies.md.
func run(root string) error {
	mods, err := listModules(root, binaries)
	if err != nil {
		return err
	}
	if err := checkAll(mods); err != nil {
		return err
	}
	notice, err := noticeText(mods)
	if err != nil {
		return err
	}
	if err := os.WriteFile(root+"/NOTICE", notice, 0o644); err != nil {
		return err
	}
	doc, err := os.ReadFile(root + "/" + docPath)
	if err != nil {
		return err
	}
	updated, err := withTable(doc, mods)
	if err != nil {
		return err
	}
	return os.WriteFile(root+"/"+docPath, updated, 0o644)
}
