package cli

import (
	"slices"
	"strings"
	"testing"
)

// TestUnknownFlag_SuggestsTheNearestFlag: a misspelt flag names the one probably meant and the
// help to see them all, instead of only saying it is unknown.
func TestUnknownFlag_SuggestsTheNearestFlag(t *testing.T) {
	_, err := run(t, "queue", "stats", "--jsn")
	if err == nil || !strings.Contains(err.Error(), "unknown flag: --jsn (did you mean --json?)") || !strings.Contains(err.Error(), "redstate queue stats --help") {
		t.Fatalf("queue stats --jsn: %v", err)
	}
	_, err = run(t, "queue", "stats", "--frobnicate")
	if err == nil || strings.Contains(err.Error(), "did you mean") || !strings.Contains(err.Error(), "see `redstate queue stats --help`") {
		t.Fatalf("queue stats --frobnicate: %v", err)
	}
}

// TestQueueCommands_ShowOnlyTheirOwnFlags: each queue subcommand defines the flags it reads and
// no other subcommand's (regenerate listed --all and --count), and stats and dead say their
// default output is a table.
func TestQueueCommands_ShowOnlyTheirOwnFlags(t *testing.T) {
	root := NewRootCommand()
	want := map[string][]string{
		"stats":      {"json"},
		"dead":       {"json", "start", "count"},
		"requeue":    {"all", "yes"},
		"purge":      {"yes"},
		"regenerate": {},
	}
	all := []string{"json", "start", "count", "all", "yes"}
	for name, flags := range want {
		cmd, _, err := root.Find([]string{"queue", name})
		if err != nil {
			t.Fatal(err)
		}
		if cmd.Flags().Lookup("queue") == nil {
			t.Errorf("queue %s lacks --queue", name)
		}
		for _, f := range all {
			has := cmd.Flags().Lookup(f) != nil
			if wanted := slices.Contains(flags, f); has != wanted {
				t.Errorf("queue %s: --%s defined = %v, want %v", name, f, has, wanted)
			}
		}
	}
	for _, name := range []string{"stats", "dead"} {
		cmd, _, _ := root.Find([]string{"queue", name})
		if !strings.Contains(cmd.Short, "a table; --json for scripts") {
			t.Errorf("queue %s: help %q does not say the default is a table", name, cmd.Short)
		}
	}
}
