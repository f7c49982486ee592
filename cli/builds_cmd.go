package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/buildstatus/redisstore"
	"github.com/redstate/redstate/config"
)

// newBuildsCommand returns `redstate builds`: admin commands that work on the build-status
// registry's Redis data directly, with the same configuration as serve.
func newBuildsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "builds",
		Short: "Inspect and manage build-status documents in Redis",
		Long: `Admin commands for the build-status registry. They talk to the configured Redis
directly (--redis, --redis-cluster, --redis-sentinel*, --config or REDSTATE_* variables),
with the same namespace and key prefix as serve.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(
		buildsSubcommand("get BUILD_ID", "Print one build's stored JSON document", cobra.ExactArgs(1), getBuildCmd),
		newBuildsDeleteCommand(),
		newBuildsListCommand(),
	)
	return cmd
}

// buildsSubcommand returns a builds subcommand running run on an opened Redis store.
func buildsSubcommand(use, short string, args cobra.PositionalArgs, run func(ctx context.Context, s buildstatus.Store, out io.Writer, args []string) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  args,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withRedisBuilds(cmd, func(s buildstatus.Store) error {
				return run(cmd.Context(), s, cmd.OutOrStdout(), args)
			})
		},
	}
	config.BindFlags(cmd.Flags(), config.FlagsRedis, config.FlagsNamespace)
	return cmd
}

func getBuildCmd(ctx context.Context, s buildstatus.Store, out io.Writer, args []string) error {
	id, err := buildstatus.NormalizeBuildID(args[0])
	if err != nil {
		return err
	}
	b, err := s.Get(ctx, id)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "%s\n", b.JSON)
	return err
}

// newBuildsDeleteCommand returns `redstate builds delete BUILD_ID --yes`.
func newBuildsDeleteCommand() *cobra.Command {
	var yes *bool
	cmd := buildsSubcommand("delete BUILD_ID", "Delete one build and its project-index entry (needs --yes)", cobra.ExactArgs(1),
		func(ctx context.Context, s buildstatus.Store, out io.Writer, args []string) error {
			return deleteBuild(ctx, s, out, args[0], *yes)
		})
	yes = bindYes(cmd)
	return cmd
}

func deleteBuild(ctx context.Context, s buildstatus.Store, out io.Writer, rawID string, yes bool) error {
	id, err := buildstatus.NormalizeBuildID(rawID)
	if err != nil {
		return err
	}
	if !yes {
		b, err := s.Get(ctx, id)
		if err != nil {
			return err
		}
		project := "?"
		if doc, err := b.Doc(); err == nil {
			project = doc.ProjectID
		}
		return notConfirmed("delete build %s of project %q", id, project)
	}
	if err := s.Delete(ctx, id, ""); err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "deleted %s\n", id)
	return err
}

// newBuildsListCommand returns `redstate builds list`: every build (SCAN) or one project's
// builds, newest first, as one JSON document per line, with progress on stderr.
func newBuildsListCommand() *cobra.Command {
	var project string
	var max int
	var asJSON *bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List builds as a table, or --json lines (all builds, or --project's newest first)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withRedisBuilds(cmd, func(s buildstatus.Store) error {
				return listBuilds(cmd.Context(), s, project, max, *asJSON, cmd.OutOrStdout(), cmd.ErrOrStderr())
			})
		},
	}
	asJSON = cmd.Flags().Bool("json", false, "print each build's stored document as one JSON line (streamed, for scripts) instead of a table")
	cmd.Flags().StringVar(&project, "project", "", "list only this project's builds, newest createdAt first")
	cmd.Flags().IntVar(&max, "max", 0, "stop after this many builds (0 = all)")
	config.BindFlags(cmd.Flags(), config.FlagsRedis, config.FlagsNamespace)
	return cmd
}

// listBuilds walks a listing page by page, writing each build to out (a table row, or its
// stored document as a JSON line) and a progress line to progress once per second.
func listBuilds(ctx context.Context, s buildstatus.Store, project string, max int, asJSON bool, out, progress io.Writer) error {
	w := bufio.NewWriter(out)
	defer w.Flush()
	var t *table
	if !asJSON {
		t = newTable(w, "BUILD", "PROJECT", "STATUS", "PLATFORMS", "UPDATED")
		defer func() { _ = t.flush() }()
	}
	var listed atomic.Int64
	stop := reportProgress(progress, &listed)
	defer stop()
	cursor := ""
	for {
		var page *buildstatus.Page
		var err error
		if project != "" {
			page, err = s.ListProject(ctx, project, cursor, buildstatus.MaxListLimit)
		} else {
			page, err = s.List(ctx, cursor, buildstatus.MaxListLimit)
		}
		if err != nil {
			return err
		}
		for _, b := range page.Builds {
			if max > 0 && listed.Load() >= int64(max) {
				return nil
			}
			if t != nil {
				doc, err := b.Doc()
				if err != nil {
					t.row(b.ETag(), "-", "unreadable: "+err.Error(), "-", "-")
				} else {
					updated := "-"
					if doc.UpdatedAt != nil {
						updated = doc.UpdatedAt.String()
					}
					t.row(doc.BuildID, doc.ProjectID, doc.Status, strings.Join(doc.Platforms, ","), updated)
				}
			} else if _, err := fmt.Fprintf(w, "%s\n", b.JSON); err != nil {
				return err
			}
			listed.Add(1)
		}
		if cursor = page.Cursor; cursor == "" {
			return nil
		}
	}
}

// reportProgress prints the running count to w every second until stop is called, then the
// final count.
func reportProgress(w io.Writer, n *atomic.Int64) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				fmt.Fprintf(w, "listed %d builds\n", n.Load())
				return
			case <-t.C:
				fmt.Fprintf(w, "listed %d builds so far...\n", n.Load())
			}
		}
	}()
	return func() { close(done); <-finished }
}

// withRedisBuilds opens the Redis build-status store (no fallback: admin commands must see
// Redis itself) and runs f.
func withRedisBuilds(cmd *cobra.Command, f func(buildstatus.Store) error) error {
	return withRedisClient(cmd, func(cfg config.Config, client redis.UniversalClient) error {
		bs := cfg.Publish.BuildStatus
		store, err := redisstore.New(client, redisstore.Options{
			Keys:        buildstatus.NewKeys(redstate.Prefix(cfg.Namespace, bs.KeyPrefix)),
			TTL:         bs.EffectiveTTL(),
			DirectCalls: true,
		})
		if err != nil {
			return err
		}
		defer store.Close()
		return f(store)
	})
}

// withApp loads and validates the configuration of cmd's flags, builds the composition root
// (its Redis client; the SQL pool on first need) and runs f; everything the root opened is
// closed after.
func withApp(cmd *cobra.Command, f func(*app) error) error {
	cfg, err := loadConfig(cmd)
	if err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	a, err := newApp(cfg, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	defer a.closeWithin(cfg.Server.ShutdownTimeout + closeMargin)
	return f(a)
}

// withRedisClient runs f with the root's Redis client (see withApp). Admin commands refuse the
// memory backend: a one-off process's memory is always empty.
func withRedisClient(cmd *cobra.Command, f func(config.Config, redis.UniversalClient) error) error {
	return withRedisApp(cmd, func(a *app) error { return f(a.cfg, a.redis) })
}

// withRedisApp is withApp for the commands that need Redis: an error without it.
func withRedisApp(cmd *cobra.Command, f func(*app) error) error {
	return withApp(cmd, func(a *app) error {
		if _, err := a.requireRedis(); err != nil {
			return err
		}
		return f(a)
	})
}
