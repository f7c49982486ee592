package resilience

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// checkJournalPath checks a file path the fallback journal will be created at: it must name a
// file (not a directory), and its directory must exist or be creatable (its nearest existing
// ancestor is a directory). Whether the process may write there is only known when it opens
// the file.
func checkJournalPath(path string) error {
	if strings.HasSuffix(path, "/") || strings.HasSuffix(path, string(filepath.Separator)) {
		return fmt.Errorf("%q ends with a separator; name a file, e.g. %q", path, filepath.Join(path, "fallback.journal"))
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("%q is a directory; name a file inside it, e.g. %q", path, filepath.Join(path, "fallback.journal"))
	}
	dir := filepath.Dir(path)
	for d := dir; ; {
		fi, err := os.Stat(d)
		switch {
		case err == nil && !fi.IsDir():
			return fmt.Errorf("directory %q cannot be created: %q is not a directory", dir, d)
		case err == nil:
			return nil // d exists: dir exists or can be created below it
		case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR): // ENOTDIR: an ancestor is a file
			return fmt.Errorf("directory %q cannot be checked: %v", dir, err)
		}
		parent := filepath.Dir(d)
		if parent == d {
			return fmt.Errorf("directory %q cannot be created: no part of it exists", dir)
		}
		d = parent
	}
}
