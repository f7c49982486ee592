// Package cli is redstate's command line: `redstate serve`, the admin commands (builds, queue,
// executor, index, feed), `redstate config print` and `redstate version`. cmd/redstate only
// calls Execute. The benchmarks are a binary of their own (cmd/redstate-bench, package
// bench/benchcmd), so the server links none of the peers they measure against.
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
		Long: `redstate gives back-ends Redis-backed state building blocks, served over HTTP/JSON by
one binary (redstate serve) and usable as Go packages:

  build status   JSON build documents with a TTL, batch reads, per-project listings,
                 per-platform updates, live changes over Server-Sent Events
  queue          reliable job queues (leases, retries, dead letters) and the report flow
  executor       multi-tenant stage executor: plans, tasks, tenant locks with fencing,
                 checkpoints, pause / resume / retry / cancel across instances
  index          CDC tag index fed by change streams (canal, Debezium, Redis Streams)
  feed           follow feed with fan-out, unread counts and live counts

serve also serves a web dashboard at /ui/ and the OpenAPI 3.1 document at /openapi.json.

Admin commands (builds, queue, executor, index, feed) work on the same Redis data as serve:
tables for people, --json for scripts, --yes for destructive actions. The separate
redstate-bench binary compares each block with its peer on a real Redis.

Without Redis configured, serve runs on embedded in-memory backends (and SQLite in
--data-dir for SQL-backed state). Every command reads the same configuration: --config FILE
(YAML), REDSTATE_* environment variables, then its flags; see docs/configuration.md.`,

		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetFlagErrorFunc(suggestFlag)
	root.AddCommand(newServeCommand(), newHealthCommand(), newBuildsCommand(), newQueueCommand(), newIndexCommand(), newFeedCommand(), newExecutorCommand(), newConfigCommand(), NewVersionCommand("redstate"))
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
