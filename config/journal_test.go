package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestJournal_DefaultOffAndFromEnvironment(t *testing.T) {
	if j := Default().Publish.BuildStatus.Resilience.Journal; j != "" {
		t.Fatalf("default journal = %q, want off", j)
	}
	const key = "publish.build-status.resilience.journal"
	if got, want := EnvName(key), "REDSTATE_PUBLISH_BUILD_STATUS_RESILIENCE_JOURNAL"; got != want {
		t.Fatalf("EnvName(%s) = %s, want %s", key, got, want)
	}
	path := filepath.Join(t.TempDir(), "sub", "fallback.journal")
	cfg, err := load("", nil, envOf(map[string]string{"REDSTATE_PUBLISH_BUILD_STATUS_RESILIENCE_JOURNAL": path}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Publish.BuildStatus.Resilience.Journal != path {
		t.Fatalf("journal from env = %q, want %q", cfg.Publish.BuildStatus.Resilience.Journal, path)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("a journal in a creatable directory must validate: %v", err)
	}
}

func TestJournal_Validate(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "plain-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	const key = "publish.build-status.resilience.journal: "
	for _, tc := range []struct {
		name, path, want string
	}{
		{"existing dir ok", filepath.Join(dir, "j"), ""},
		{"existing file ok", file, ""},
		{"creatable dirs ok", filepath.Join(dir, "a", "b", "j"), ""},
		{"is a directory", dir, key + `"` + dir + `" is a directory; name a file inside it`},
		{"trailing separator", dir + "/x/", key + `"` + dir + `/x/" ends with a separator; name a file`},
		{"parent is a file", filepath.Join(file, "j"), key + `directory "` + file + `" cannot be created: "` + file + `" is not a directory`},
		{"ancestor is a file", filepath.Join(file, "a", "j"), `cannot be created: "` + file + `" is not a directory`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			c.Publish.BuildStatus.Resilience.Journal = tc.path
			err := c.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}
