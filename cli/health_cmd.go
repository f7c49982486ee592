package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// newHealthCommand returns `redstate health [--url URL] [--timeout D]`: a health check that needs
// no shell and no curl (the container image has neither). It GETs the URL, /readyz of a local
// serve by default, and exits 0 on a 2xx answer, 1 otherwise with the status and the answer's
// first line on stderr.
func newHealthCommand() *cobra.Command {
	var url string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Check a running serve: exit 0 when --url (its /readyz by default) answers 2xx",
		Long: `GETs --url and exits 0 when it answers 2xx, 1 otherwise (the status and the first line of
the answer go to stderr). Meant for container and orchestrator health checks: the image has no
shell and no curl, so its HEALTHCHECK and compose's healthcheck run
"redstate health --url http://127.0.0.1:8080/readyz". /readyz answers 503 while a block runs
degraded (Redis down under fail-fast, a source failing); /healthz answers 200 while the process
serves at all.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return checkHealth(cmd.Context(), url, timeout)
		},
	}
	cmd.Flags().StringVar(&url, "url", "http://127.0.0.1:8080/readyz", "the URL to check")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Second, "how long to wait for the answer")
	return cmd
}

// checkHealth GETs url within timeout. Errors: the request failed, or the answer was not 2xx.
func checkHealth(ctx context.Context, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode/100 != 2 {
		first, _, _ := strings.Cut(strings.TrimSpace(string(body)), "\n")
		return fmt.Errorf("health: %s answered %s: %s", url, resp.Status, first)
	}
	return nil
}
