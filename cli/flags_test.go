package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/redstate/redstate/config"
)

// commandFlagGroups is, per runnable command, the configuration flag groups it uses. A command
// missing here fails TestCommands_ShowOnlyTheConfigFlagsTheyUse, so a new command cannot
// silently get every configuration flag.
var commandFlagGroups = map[string][]config.FlagGroup{
	"serve":        config.AllFlagGroups,
	"config print": config.AllFlagGroups,
	"version":      nil,
	"health":       nil,

	"builds get":    {config.FlagsRedis, config.FlagsNamespace},
	"builds delete": {config.FlagsRedis, config.FlagsNamespace},
	"builds list":   {config.FlagsRedis, config.FlagsNamespace},

	"queue stats":       {config.FlagsRedis, config.FlagsNamespace},
	"queue dead":        {config.FlagsRedis, config.FlagsNamespace},
	"queue requeue":     {config.FlagsRedis, config.FlagsNamespace},
	"queue purge":       {config.FlagsRedis, config.FlagsNamespace},
	"queue regenerate":  {config.FlagsRedis, config.FlagsNamespace, config.FlagsData},
	"queue enqueue":     {config.FlagsRedis, config.FlagsNamespace},
	"queue inspect":     {config.FlagsRedis, config.FlagsNamespace},
	"queue cancel":      {config.FlagsRedis, config.FlagsNamespace},
	"queue list":        {config.FlagsRedis, config.FlagsNamespace},
	"queue requeue-job": {config.FlagsRedis, config.FlagsNamespace},
	"queue pause":       {config.FlagsRedis, config.FlagsNamespace},
	"queue resume":      {config.FlagsRedis, config.FlagsNamespace},

	"executor plans":       {config.FlagsRedis, config.FlagsNamespace},
	"executor tasks":       {config.FlagsRedis, config.FlagsNamespace},
	"executor locks":       {config.FlagsRedis, config.FlagsNamespace},
	"executor checkpoints": {config.FlagsRedis, config.FlagsNamespace},
	"executor pause":       {config.FlagsRedis, config.FlagsNamespace},
	"executor resume":      {config.FlagsRedis, config.FlagsNamespace},
	"executor retry":       {config.FlagsRedis, config.FlagsNamespace},
	"executor cancel":      {config.FlagsRedis, config.FlagsNamespace},

	"index replay":         {config.FlagsRedis, config.FlagsNamespace},
	"index verify":         {config.FlagsRedis, config.FlagsNamespace},
	"index status":         {config.FlagsRedis, config.FlagsNamespace},
	"index migrate-layout": {config.FlagsRedis, config.FlagsNamespace},

	"index resnapshot": {config.FlagsRedis, config.FlagsNamespace},

	"feed rebuild": {config.FlagsRedis, config.FlagsNamespace, config.FlagsData},
	"feed verify":  {config.FlagsRedis, config.FlagsNamespace, config.FlagsData},
	"feed counts":  {config.FlagsRedis, config.FlagsNamespace, config.FlagsData},
}

// walk calls f for every runnable command under c, with its path below the root.
func walk(c *cobra.Command, f func(path string, c *cobra.Command)) {
	for _, sub := range c.Commands() {
		if sub.Name() == "help" || sub.Name() == "completion" {
			continue
		}
		if sub.Runnable() && !sub.HasSubCommands() {
			f(strings.TrimPrefix(sub.CommandPath(), "redstate "), sub)
		}
		walk(sub, f)
	}
}

// TestCommands_ShowOnlyTheConfigFlagsTheyUse walks every command of the root: each is in
// commandFlagGroups and defines exactly the configuration flags of its groups (plus --config
// when it has any), nothing of the others.
func TestCommands_ShowOnlyTheConfigFlagsTheyUse(t *testing.T) {
	seen := map[string]bool{}
	walk(NewRootCommand(), func(path string, c *cobra.Command) {
		seen[path] = true
		groups, ok := commandFlagGroups[path]
		if !ok {
			t.Errorf("command %q is not in commandFlagGroups: list the configuration flag groups it uses", path)
			return
		}
		for _, g := range config.AllFlagGroups {
			for _, name := range config.GroupFlags(g) {
				has, want := c.Flags().Lookup(name) != nil, slices.Contains(groups, g)
				if has != want {
					t.Errorf("%s: has --%s = %v, want %v (group %s)", path, name, has, want, g)
				}
			}
		}
		if has, want := c.Flags().Lookup(config.FlagConfig) != nil, len(groups) > 0; has != want {
			t.Errorf("%s: has --config = %v, want %v", path, has, want)
		}
	})
	for path := range commandFlagGroups {
		if !seen[path] {
			t.Errorf("commandFlagGroups lists %q, which is no command", path)
		}
	}
}

// TestREADME_ListsEveryCommand: README's "Commands" table has a row for every command.
func TestREADME_ListsEveryCommand(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	walk(NewRootCommand(), func(path string, _ *cobra.Command) {
		if !strings.Contains(readme, "| `"+path+"` | `redstate "+path) {
			t.Errorf("README.md's Commands table has no example row for %q", path)
		}
	})
}
