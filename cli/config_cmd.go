package cli

import (
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/redstate/redstate/config"
	"github.com/redstate/redstate/report"
)

// loadConfig loads the configuration selected by cmd's flags (--config or REDSTATE_CONFIG,
// then the environment, then the explicitly set flags) and logs a warning to cmd's error
// output for every renamed key given by its old name. It does not validate.
func loadConfig(cmd *cobra.Command) (config.Config, error) {
	fs := cmd.Flags()
	cfg, err := config.Load(config.ConfigPath(fs, os.LookupEnv), fs)
	if err != nil {
		return cfg, err
	}
	logDeprecations(cfg, cmd.ErrOrStderr())
	return cfg, nil
}

// logDeprecations logs one warning per renamed key in cfg.Deprecations, in the format of
// cfg.Log (text when it is not valid: Validate reports that).
func logDeprecations(cfg config.Config, w io.Writer) {
	if len(cfg.Deprecations) == 0 {
		return
	}
	log, err := newLogger(cfg.Log, w)
	if err != nil {
		log = slog.New(slog.NewTextHandler(w, nil))
	}
	for _, d := range cfg.Deprecations {
		log.Warn("deprecated configuration key", "old", d.Old, "new", d.New, "source", d.Source)
	}
}

func newConfigCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Inspect the configuration",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
	}
	cmd.AddCommand(newConfigPrintCommand())
	return cmd
}

func newConfigPrintCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "print",
		Short: "Print the effective configuration as YAML, secrets redacted",
		Long: `Print the configuration serve would use (defaults, then --config file, then REDSTATE_*
environment variables, then flags) as YAML, with passwords and tokens shown as "***".
The output is a valid configuration file. Exits with 1 after printing when the
configuration is invalid, listing every problem.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			printed := cfg.Redacted()
			printed.Queue.Queues = printed.Queue.EffectiveQueues(report.HandlerReport) // defaults spelled out (prefetch: its concurrency, not null)
			out, err := printed.YAML()
			if err != nil {
				return fmt.Errorf("printing configuration: %w", err)
			}
			if _, err := cmd.OutOrStdout().Write(out); err != nil {
				return err
			}
			return cfg.Validate()
		},
	}
	config.BindFlags(cmd.Flags())
	return cmd
}
