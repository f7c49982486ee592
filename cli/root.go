// Package cli is redstate's command line: `redstate serve`, `redstate bench`,
// `redstate config print` and `redstate version`. cmd/redstate only calls Execute.
package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
)

// NewRootCommand returns the `redstate` command with every subcommand registered. Commands
// write to the command's Out and Err writers (stdout and stderr unless set), and stop
// serving when the context passed to ExecuteContext is cancelled.
func NewRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "redstate",
		Short: "Redis-backed state blocks, served over HTTP/JSON",
		Long: `redstate serves Redis-backed state blocks over HTTP/JSON. The first block is the
build-status registry: JSON build documents with a TTL, batch reads, per-project
listings, per-platform updates and live change streams (Server-Sent Events).

Without Redis configured it runs on an embedded in-memory backend.
Configuration: --config FILE (YAML), REDSTATE_* environment variables, flags;
see docs/configuration.md.`,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.AddCommand(newServeCommand(), NewBenchCommand(), newBuildsCommand(), newQueueCommand(), newIndexCommand(), newFeedCommand(), newExecutorCommand(), newConfigCommand(), newVersionCommand())
	return root
}

// Execute runs the root command on os.Args and returns the process exit code: 0 on success
// (including a graceful shutdown after SIGTERM/SIGINT), 1 on any error, which is printed to
// stderr.
func Execute() int {
	// Installed once, before any Redis client exists (go-redis's logger is a plain global).
	redis.SetLogger(redisLogs{})
	root := NewRootCommand()
	if err := root.ExecuteContext(context.Background()); err != nil {
		fmt.Fprintf(os.Stderr, "redstate: %v\n", err)
		return 1
	}
	return 0
}
