package cli

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/redstate/redstate/config"
)

// loadConfig loads the configuration selected by fs (--config or REDSTATE_CONFIG, then the
// environment, then the explicitly set flags). It does not validate.
func loadConfig(fs *pflag.FlagSet) (config.Config, error) {
	return config.Load(config.ConfigPath(fs, os.LookupEnv), fs)
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
			cfg, err := loadConfig(cmd.Flags())
			if err != nil {
				return err
			}
			printed := cfg.Redacted()
			printed.Queue.Queues = printed.Queue.EffectiveQueues() // defaults spelled out (prefetch: its concurrency, not null)
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
