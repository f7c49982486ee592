package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/redstate/redstate/config"
	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/mysqlsource"
)

func newIndexResnapshotCommand() *cobra.Command {
	var source string
	var yes *bool
	cmd := &cobra.Command{
		Use:   "resnapshot --source mysql --yes",
		Short: "Make the MySQL binlog source take a new snapshot (after a purged position)",
		Long: `Deletes the MySQL source's recorded binlog position, its snapshot position and progress, and
the binlog lease, in one step. The serve instance reading the binlog notices at its next
position write or lease renewal (within a third of index.mysql.lease-ttl) and goes standby; an
instance in standby acquires the lease within a fifth of the TTL (the old reader itself after a
whole TTL), finds no position and snapshots the followed tables again; with no serve running,
the next one to start does. Rows deleted from the tables while the
source was behind are in no snapshot: remove them afterwards with
redstate index verify --source mysql --repair.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if source != "mysql" {
				return fmt.Errorf("--source must be mysql (the only source with a snapshot to take again), got %q", source)
			}
			return withIndexer(cmd, func(a *app, ix *index.Indexer) error {
				keys := ix.BlockKeys().MySQL()
				if !*yes {
					return notConfirmed("delete the MySQL source's binlog position, snapshot and lease (%s, %s, %s, %s) so that it snapshots the tables again",
						keys.Position, keys.Snapshot, keys.Progress, keys.Lease)
				}
				r, err := mysqlsource.Resnapshot(cmd.Context(), a.redis, keys)
				if err != nil {
					return err
				}
				printResnapshot(cmd.OutOrStdout(), r)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&source, "source", "", "the source to snapshot again: mysql")
	yes = bindYes(cmd)
	config.BindFlags(cmd.Flags(), config.FlagsRedis, config.FlagsNamespace)
	return cmd
}

// printResnapshot says what Resnapshot deleted and what happens next.
func printResnapshot(out io.Writer, r mysqlsource.Resnapshotted) {
	or := func(s, none string) string {
		if s == "" {
			return none
		}
		return s
	}
	fmt.Fprintf(out, "deleted the recorded binlog position (%s), the snapshot position (%s) and progress (%d tables), and the binlog lease (holder: %s)\n",
		or(r.Position, "none"), or(r.Snapshot, "none"), r.ProgressTables, or(r.LeaseHolder, "none"))
	fmt.Fprintln(out, "a serve instance takes a new snapshot within about 1.5 × index.mysql.lease-ttl, when the reader has noticed and the lease is acquired again (with none running, the next to start does);")
	fmt.Fprintln(out, "when it is done (log \"snapshot of table done\"), remove the rows deleted meanwhile with: redstate index verify --source mysql --repair")
}
