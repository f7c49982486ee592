package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/redstate/redstate/internal/suggest"
)

// suggestFlag is every command's flag error handler: an unknown flag names the command's flag
// that was probably meant (`--jsn`: did you mean --json?) and where to see them all; other flag
// errors pass through.
func suggestFlag(cmd *cobra.Command, err error) error {
	msg := err.Error()
	name, ok := strings.CutPrefix(msg, "unknown flag: --")
	if !ok {
		return err
	}
	var known []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			known = append(known, f.Name)
		}
	})
	if near := suggest.Near(name, known); near != "" {
		return fmt.Errorf("%s (did you mean --%s?); see `%s --help`", msg, near, cmd.CommandPath())
	}
	return fmt.Errorf("%s; see `%s --help` for the flags of %s", msg, cmd.CommandPath(), cmd.Name())
}
