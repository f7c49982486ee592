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

	renamed := doc[max(strings.Index(doc, "## Renamed keys"), 0):]
	for _, r := range RenamedKeys() {
		if !strings.Contains(renamed, "| `"+r.Old+"` | `"+r.New+"` |") {
			t.Errorf("docs/configuration.md's Renamed keys table has no row %s → %s", r.Old, r.New)
		}
	}

	start := strings.Index(doc, "```yaml\n")
	end := strings.Index(doc[start+8:], "```")
	example := doc[start+8 : start+8+end]
	if _, err := yaml.Parser().Unmarshal([]byte(example)); err != nil {
		t.Fatalf("example is not YAML: %v", err)
	}
	loadExample(t, example)
}

// loadExample loads and validates a documented configuration file, failing t if it does not.
func loadExample(t *testing.T, example string) Config {
	t.Helper()
	cfg, err := load(writeFile(t, example), nil, envOf(nil))
	if err != nil {
		t.Fatalf("example does not load: %v", err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("example does not validate: %v", err)
	}
	return cfg
}

// TestDocs_IndexSourceExamplesLoad keeps the configuration examples of docs/index.md's table
// of sources true: each block marked `<!-- file: source-NAME.yaml -->` loads, validates and
// turns on the source it shows.
func TestDocs_IndexSourceExamplesLoad(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "docs", "index.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := markedBlocks(string(b), "source-")
	sources := map[string]func(Config) bool{
		"source-http.yaml":     func(c Config) bool { return len(c.Index.Tables) > 0 },
		"source-streams.yaml":  func(c Config) bool { return len(c.Index.Streams.Keys) > 0 },
		"source-postgres.yaml": func(c Config) bool { return c.Index.Postgres.URL != "" },
		"source-mysql.yaml":    func(c Config) bool { return c.Index.MySQL.URL != "" },
	}
	for name, on := range sources {
		t.Run(name, func(t *testing.T) {
			example, ok := blocks[name]
			if !ok {
				t.Fatalf("docs/index.md has no block marked <!-- file: %s -->", name)
			}
			if !on(loadExample(t, example)) {
				t.Fatal("example does not turn its source on")
			}
		})
	}
	for name := range blocks {
		if sources[name] == nil {
			t.Errorf("docs/index.md block %s is not checked here: add it to the test", name)
		}
	}
}

// markedBlocks returns the fenced blocks of a markdown text that follow a line
// `<!-- file: NAME -->` whose NAME begins with prefix, by NAME.
func markedBlocks(text, prefix string) map[string]string {
	blocks := map[string]string{}
	lines := strings.Split(text, "\n")
	for i := 0; i+1 < len(lines); i++ {
		name, ok := strings.CutPrefix(strings.TrimSpace(lines[i]), "<!-- file: "+prefix)
		if !ok || !strings.HasPrefix(lines[i+1], "```") {
			continue
		}
		name = prefix + strings.TrimSpace(strings.TrimSuffix(name, "-->"))
		var body strings.Builder
		for j := i + 2; j < len(lines) && !strings.HasPrefix(lines[j], "```"); j++ {
			body.WriteString(lines[j] + "\n")
		}
		blocks[name] = body.String()
	}
	return blocks
}
