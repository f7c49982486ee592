package redstate_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryPackageHasADoc: every directory of the module holding Go files has a package (or
// command) doc on a non-test file, a doc.go for a package of tests only, so go doc and
// pkg.go.dev describe every package.
func TestEveryPackageHasADoc(t *testing.T) {
	dirs := map[string]bool{} // directory → has a documented non-test file
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		dir := filepath.Dir(path)
		if _, seen := dirs[dir]; !seen {
			dirs[dir] = false
		}
		if strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		if f.Doc != nil && strings.TrimSpace(f.Doc.Text()) != "" {
			dirs[dir] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for dir, documented := range dirs {
		if !documented {
			t.Errorf("%s has no package doc: write one above the package clause of a non-test file (doc.go for a package of tests only)", dir)
		}
	}
}

// TestEveryBlockHasARunnableExample: each block package has an Example with an Output
// comment (so go test runs it and compares its output) in its example_test.go.
func TestEveryBlockHasARunnableExample(t *testing.T) {
	for _, block := range []string{"buildstatus", "queue", "executor", "index", "feed", "report"} {
		fset := token.NewFileSet()
		path := filepath.Join(block, "example_test.go")
		src, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s: %v", block, err)
			continue
		}
		f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		runnable := 0
		for _, ex := range doc.Examples([]*ast.File{f}...) {
			if ex.Output != "" && !ex.EmptyOutput {
				runnable++
			}
		}
		if runnable == 0 {
			t.Errorf("%s has no Example with an // Output: comment", path)
		}
	}
}
