package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knadh/koanf/parsers/yaml"
)

// TestDocs_ListEveryKey keeps docs/configuration.md complete: every key, its environment
// variable and its flag appear, and the example file loads and validates.
func TestDocs_ListEveryKey(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, key := range Keys() {
		row := "| `" + key + "` |"
		if !strings.Contains(doc, row) {
			t.Errorf("docs/configuration.md has no row for %s", key)
			continue
		}
		line := doc[strings.Index(doc, row):]
		line = line[:strings.Index(line, "\n")]
		if !strings.Contains(line, "`"+EnvName(key)+"`") {
			t.Errorf("row of %s does not name %s", key, EnvName(key))
		}
		if f := FlagForKey(key); f != "" && !strings.Contains(line, "`--"+f+"`") {
			t.Errorf("row of %s does not name --%s", key, f)
		}
	}

	start := strings.Index(doc, "```yaml\n")
	end := strings.Index(doc[start+8:], "```")
	example := doc[start+8 : start+8+end]
	if _, err := yaml.Parser().Unmarshal([]byte(example)); err != nil {
		t.Fatalf("example is not YAML: %v", err)
	}
	cfg, err := load(writeFile(t, example), nil, envOf(nil))
	if err != nil {
		t.Fatalf("example does not load: %v", err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("example does not validate: %v", err)
	}
}
