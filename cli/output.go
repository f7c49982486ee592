package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
)

// The output rules every admin command follows (see README "Commands"):
//   - a listing prints an aligned table by default and, with --json, one JSON document (an
//     array for lists) on stdout, for scripts;
//   - a destructive command does nothing without --yes and exits non-zero saying what it would
//     have done;
//   - long work shows a progress bar on stderr.

// bindJSON adds --json to cmd and returns its value.
func bindJSON(cmd *cobra.Command) *bool {
	return cmd.Flags().Bool("json", false, "print one JSON document on stdout (for scripts) instead of a table")
}

// bindYes adds --yes to a destructive cmd and returns its value.
func bindYes(cmd *cobra.Command) *bool {
	return cmd.Flags().Bool("yes", false, "confirm: without it the command only says what it would do and exits 1")
}

// notConfirmed is a destructive command's error without --yes: what would happen.
func notConfirmed(format string, args ...any) error {
	return fmt.Errorf("not confirmed: this would %s; add --yes to do it", fmt.Sprintf(format, args...))
}

// writeJSON writes v as one JSON document and a newline.
func writeJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// table writes rows as aligned columns.
type table struct{ tw *tabwriter.Writer }

// newTable starts a table on w with the given column headers.
func newTable(w io.Writer, headers ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	t.row(toAny(headers)...)
	return t
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// row adds one row; every cell is made safe for a terminal (cell).
func (t *table) row(cells ...any) {
	parts := make([]string, len(cells))
	for i, c := range cells {
		parts[i] = cell(c)
	}
	fmt.Fprintln(t.tw, strings.Join(parts, "\t"))
}

// flush writes the table out.
func (t *table) flush() error { return t.tw.Flush() }

// maxCell bounds a table cell; --json has the whole value.
const maxCell = 60

// cell renders v for a table: times as RFC 3339 (UTC, "-" when zero), empty strings as "-",
// control characters (newlines, tabs, terminal escapes of user data) escaped, long values cut.
func cell(v any) string {
	var s string
	switch x := v.(type) {
	case time.Time:
		if x.IsZero() {
			return "-"
		}
		s = x.UTC().Format(time.RFC3339)
	case time.Duration:
		s = x.Round(time.Second).String()
	case string:
		s = x
	default:
		s = fmt.Sprint(v)
	}
	if s == "" {
		return "-"
	}
	if strings.ContainsFunc(s, unicode.IsControl) {
		var b strings.Builder
		for _, r := range s {
			if unicode.IsControl(r) {
				fmt.Fprintf(&b, "\\x%02x", r)
			} else {
				b.WriteRune(r)
			}
		}
		s = b.String()
	}
	if r := []rune(s); len(r) > maxCell {
		s = string(r[:maxCell-1]) + "…"
	}
	return s
}

// newProgressBar returns the progress bar of long work on w (stderr): total steps, or -1 when
// unknown (a spinner with a count). It is cleared when finished.
func newProgressBar(w io.Writer, total int64, what string) *progressbar.ProgressBar {
	return progressbar.NewOptions64(total, append(progressOptions(w, what), progressbar.OptionShowCount())...)
}

// progressOptions are the options every progress bar shares. The spinner's own ticker is off:
// it renders from a goroutine of the library that reads the bar's state without its lock (a
// data race with our updates under -race); the bar still moves on every update.
func progressOptions(w io.Writer, what string) []progressbar.Option {
	return []progressbar.Option{progressbar.OptionSetWriter(w), progressbar.OptionSetDescription(what),
		progressbar.OptionThrottle(200 * time.Millisecond), progressbar.OptionClearOnFinish(), progressbar.OptionSetSpinnerChangeInterval(0)}
}
