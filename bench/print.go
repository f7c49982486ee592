package bench

import (
	"fmt"
	"io"
)

// Printer is what a bench run measured, as the command prints it to stdout: a table, then
// the RESULT lines.
type Printer interface {
	// Print writes the table and the RESULT lines.
	Print(w io.Writer) error
}

// Comparisons is a bench's list of comparisons; it prints as PrintTable and one ResultLine
// each (nothing when empty).
type Comparisons []Comparison

// Print implements Printer.
func (cs Comparisons) Print(w io.Writer) error {
	return PrintComparisons(w, cs, func(i int) string { return ResultLine(cs[i]) })
}

// PrintComparisons writes cs's table and line(i) for each comparison (nothing when cs is
// empty).
func PrintComparisons(w io.Writer, cs []Comparison, line func(i int) string) error {
	if len(cs) == 0 {
		return nil
	}
	if err := PrintTable(w, cs); err != nil {
		return err
	}
	lines := make([]string, len(cs))
	for i := range cs {
		lines[i] = line(i)
	}
	return PrintLines(w, lines)
}

// PrintLines writes lines, one a line.
func PrintLines(w io.Writer, lines []string) error {
	for _, l := range lines {
		if _, err := fmt.Fprintln(w, l); err != nil {
			return err
		}
	}
	return nil
}

// PrintFunc is a Printer made of a function.
type PrintFunc func(w io.Writer) error

// Print implements Printer.
func (f PrintFunc) Print(w io.Writer) error { return f(w) }
