package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/redstate/redstate/config"
	"github.com/redstate/redstate/index"
)

// newIndexMigrateLayoutCommand returns `redstate index migrate-layout`: move every declared
// table's rows still of layout 1 (a kid- relation key) to layout 2 at once.
func newIndexMigrateLayoutCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "migrate-layout",
		Short: "Move the index's rows of layout 1 (kid- relation keys) into their version keys (layout 2)",
		Long: `For every declared table not yet marked layout 2, finds the rows' layout-1 relation keys
(<prefix>:<db>:<table>:kid-<id>) by SCAN, moves each into the row's version key (fil-<id>), one
atomic script per row, deletes it, then marks the table (<prefix>:<db>:<table>:layout). serve does
the same at start, in the background; changes are applied correctly before and during it. Safe to
run while serve runs and to run again. Stop every instance of a release before layout 2 first
(docs/index.md, Layout 2). Progress on stderr, one line per table on stdout.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withIndexer(cmd, func(a *app, ix *index.Indexer) error {
				out, progress := cmd.OutOrStdout(), cmd.ErrOrStderr()
				for _, t := range ix.Tables() {
					moved, already, err := ix.MigrateLayout(cmd.Context(), t.DB, t.Table, func(moved int) {
						fmt.Fprintf(progress, "%s.%s: %d rows moved\n", t.DB, t.Table, moved)
					})
					if err != nil {
						return fmt.Errorf("%s.%s: %w", t.DB, t.Table, err)
					}
					state := fmt.Sprintf("%d rows moved, now layout %d", moved, index.LayoutVersion)
					if already {
						state = fmt.Sprintf("already layout %d", index.LayoutVersion)
					}
					if _, err := fmt.Fprintf(out, "%s.%s: %s\n", t.DB, t.Table, state); err != nil {
						return err
					}
				}
				return nil
			})
		},
	}
	config.BindFlags(cmd.Flags(), config.FlagsRedis, config.FlagsNamespace)
	return cmd
}
