package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/redstate/redstate/config"
)

// TestDocs_ConfigExamplesLoad: the complete configuration examples the docs define as files
// (`<!-- file: NAME -->` before a YAML block) load and validate as serve would read them.
func TestDocs_ConfigExamplesLoad(t *testing.T) {
	_, files := docExamples(t)
	for _, name := range []string{"index-kafka.yaml"} {
		content, ok := files[name]
		if !ok {
			t.Errorf("no doc defines %s any more", name)
			continue
		}
		path := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Load(path, nil)
		if err != nil {
			t.Errorf("%s does not load: %v", name, err)
			continue
		}
		if err := cfg.Validate(); err != nil {
			t.Errorf("%s does not validate: %v", name, err)
		}
	}
}
