package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/redstate/redstate/internal/buildinfo"
)

// NewVersionCommand returns `NAME version [--json]`: what the binary was built from (module
// version, VCS revision, dirty flag, the commit's time, Go version and platform; see package
// buildinfo).
func NewVersionCommand(name string) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, VCS revision, build time and Go version (--json for scripts)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info := buildinfo.Read()
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), info)
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", name, info.Short())
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON document {version, revision, dirty, buildTime, goVersion, platform}")
	return cmd
}
