package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/redstate/redstate/config"
	"github.com/redstate/redstate/feed"
	"github.com/redstate/redstate/feed/feedblock"
	"github.com/redstate/redstate/feed/sqlfeed"
)

// newFeedCommand returns `redstate feed`: rebuild the feed's Redis state from SQL and verify it.
func newFeedCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "feed",
		Short: "Rebuild the feed's Redis state from SQL, or report where it drifted",
		Long: `Commands for the feed block (docs/feed.md). They use the configured SQL database
(database.url, default SQLite in --data-dir) and Redis, as serve does.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	var user int64
	var yes *bool
	rebuild := &cobra.Command{
		Use:   "rebuild",
		Short: "Replace every user's (or --user's) unread state, and every author index and post cache, in Redis with what SQL implies (needs --yes)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !*yes {
				who := "every user who follows someone"
				if user > 0 {
					who = fmt.Sprintf("user %d", user)
				}
				return notConfirmed("replace the Redis unread state (unread sets, counts, read set) of %s with what SQL implies; a fan-out running meanwhile may need the next one to show", who)
			}
			return withFeed(cmd, func(svc *feed.Service) error {
				n, err := forEachUser(cmd.Context(), svc, user, "rebuilding", cmd.ErrOrStderr(), func(u int64) error {
					return svc.RebuildUser(cmd.Context(), u)
				})
				fmt.Fprintf(cmd.OutOrStdout(), "rebuilt the unread state of %d users\n", n)
				if err != nil || user > 0 {
					return err
				}
				n, err = forEachAuthor(cmd.Context(), svc, "rebuilding", cmd.ErrOrStderr(), func(a int64) error {
					return svc.RebuildAuthor(cmd.Context(), a)
				})
				fmt.Fprintf(cmd.OutOrStdout(), "rebuilt the index and post caches of %d authors\n", n)
				return err
			})
		},
	}
	verify := &cobra.Command{
		Use:   "verify",
		Short: "Compare every user's (or --user's) unread counts and sets, and every author index and post cache, in Redis with SQL; exit 1 on drift",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withFeed(cmd, func(svc *feed.Service) error {
				drifted := 0
				n, err := forEachUser(cmd.Context(), svc, user, "verifying", cmd.ErrOrStderr(), func(u int64) error {
					drifts, err := svc.VerifyUser(cmd.Context(), u)
					for _, d := range drifts {
						line, _ := json.Marshal(d)
						fmt.Fprintln(cmd.OutOrStdout(), string(line))
					}
					drifted += len(drifts)
					return err
				})
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "verified %d users: %d drifted (user, author) pairs\n", n, drifted)
				if user == 0 {
					authorsDrifted := 0
					n, err = forEachAuthor(cmd.Context(), svc, "verifying", cmd.ErrOrStderr(), func(a int64) error {
						d, err := svc.VerifyAuthor(cmd.Context(), a)
						if d != nil {
							line, _ := json.Marshal(d)
							fmt.Fprintln(cmd.OutOrStdout(), string(line))
							authorsDrifted++
						}
						return err
					})
					if err != nil {
						return err
					}
					fmt.Fprintf(cmd.OutOrStdout(), "verified %d authors: %d with a drifted index or post cache\n", n, authorsDrifted)
					drifted += authorsDrifted
				}
				if drifted > 0 {
					return errors.New("the feed's Redis state drifted from SQL (run `redstate feed rebuild`)")
				}
				return nil
			})
		},
	}
	var asJSON *bool
	counts := &cobra.Command{
		Use:   "counts --user ID",
		Short: "Print a user's unread counts per author and the total (from Redis; from SQL while it is down)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if user <= 0 {
				return errors.New("--user is required (a user id > 0)")
			}
			return withFeed(cmd, func(svc *feed.Service) error {
				byAuthor, total, err := svc.UnreadCounts(cmd.Context(), user)
				if err != nil {
					return err
				}
				return printFeedCounts(cmd.OutOrStdout(), user, byAuthor, total, *asJSON)
			})
		},
	}
	asJSON = bindJSON(counts)
	yes = bindYes(rebuild)
	for _, c := range []*cobra.Command{rebuild, verify, counts} {
		c.Flags().Int64Var(&user, "user", 0, "only this user")
		config.BindFlags(c.Flags(), config.FlagsRedis, config.FlagsNamespace, config.FlagsData)
	}
	cmd.AddCommand(rebuild, verify, counts)
	return cmd
}

// printFeedCounts prints a user's unread counts: a table of authors (most unread first), or
// with asJSON {"user","counts":{author: n},"total"}.
func printFeedCounts(w io.Writer, user int64, byAuthor map[int64]int64, total int64, asJSON bool) error {
	if asJSON {
		counts := make(map[string]int64, len(byAuthor))
		for a, n := range byAuthor {
			counts[strconv.FormatInt(a, 10)] = n
		}
		return writeJSON(w, map[string]any{"user": user, "counts": counts, "total": total})
	}
	authors := slices.Collect(maps.Keys(byAuthor))
	slices.SortFunc(authors, func(a, b int64) int {
		if c := cmp.Compare(byAuthor[b], byAuthor[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	t := newTable(w, "AUTHOR", "UNREAD")
	for _, a := range authors {
		t.row(a, byAuthor[a])
	}
	t.row("total", total)
	return t.flush()
}

// withFeed runs f with a feed Service on the configured SQL database and Redis.
func withFeed(cmd *cobra.Command, f func(*feed.Service) error) error {
	return withRedisApp(cmd, func(a *app) error {
		ctx := cmd.Context()
		db, err := a.sql(ctx)
		if err != nil {
			return err
		}
		src, err := sqlfeed.Open(ctx, db, a.cfg.Feed.SQL)
		if err != nil {
			return err
		}
		svc, err := feed.NewService(src, feedblock.RedisCache(a.env(), a.cfg.Feed), feed.Options{HybridThreshold: a.cfg.Feed.HybridThreshold})
		if err != nil {
			return err
		}
		return f(svc)
	})
}

// forEachUser runs f for one user, or for every user who follows someone (keyset pages),
// with a progress bar; it returns how many users it did.
func forEachUser(ctx context.Context, svc *feed.Service, only int64, what string, progress io.Writer, f func(int64) error) (int, error) {
	if only > 0 {
		return 1, f(only)
	}
	return forEachID(ctx, svc.EachUser, "user", what, progress, f)
}

// forEachAuthor runs f for every author who has posts (keyset pages), with a progress bar; it
// returns how many authors it did.
func forEachAuthor(ctx context.Context, svc *feed.Service, what string, progress io.Writer, f func(int64) error) (int, error) {
	return forEachID(ctx, svc.EachAuthor, "author", what, progress, f)
}

// forEachID runs f for every id each walks (feed.Service.EachUser or EachAuthor), counting them
// on a progress bar "<what> <noun>s"; it returns how many it did.
func forEachID(ctx context.Context, each func(ctx context.Context, f func(int64) error) error, noun, what string,
	progress io.Writer, f func(int64) error) (int, error) {
	bar := newProgressBar(progress, -1, what+" "+noun+"s")
	defer func() { _ = bar.Finish() }()
	n := 0
	err := each(ctx, func(id int64) error {
		if err := f(id); err != nil {
			return fmt.Errorf("%s %d: %w", noun, id, err)
		}
		n++
		_ = bar.Add(1)
		return nil
	})
	return n, err
}
