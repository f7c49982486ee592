package bench

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// Comparison is one operation measured on our implementation and on a raw baseline.
type Comparison struct {
	// Name is the operation's RESULT name, e.g. "buildstatus.get".
	Name string
	// Ours and Baseline are the two measurements.
	Ours, Baseline *Result
}

// Ratio returns ours/baseline throughput (0 if the baseline did nothing).
func (c Comparison) Ratio() float64 {
	b := c.Baseline.OpsPerSec()
	if b == 0 {
		return 0
	}
	return c.Ours.OpsPerSec() / b
}

// ResultLine formats c as the one machine-readable line a run prints per operation:
//
//	RESULT <name> ours=<ops/s> baseline=<ops/s> ratio=<ours/baseline> p99_ms=<ours> baseline_p99_ms=<raw>
//
// Throughputs have no decimals, the ratio two, latencies (milliseconds) three.
func ResultLine(c Comparison) string {
	return fmt.Sprintf("RESULT %s ours=%.0f baseline=%.0f ratio=%.2f p99_ms=%.3f baseline_p99_ms=%.3f",
		c.Name, c.Ours.OpsPerSec(), c.Baseline.OpsPerSec(), c.Ratio(),
		ms(c.Ours.Percentile(99)), ms(c.Baseline.Percentile(99)))
}

// PrintTable writes one row per measurement: throughput, p50/p99/p99.9 latency and errors.
func PrintTable(w io.Writer, cs []Comparison) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "op\timpl\tops\tops/s\tp50_ms\tp99_ms\tp999_ms\terrors\t")
	for _, c := range cs {
		for _, r := range []struct {
			impl string
			res  *Result
		}{{"ours", c.Ours}, {"raw", c.Baseline}} {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%.3f\t%.3f\t%.3f\t%d\t\n", c.Name, r.impl, r.res.Ops, r.res.OpsPerSec(),
				ms(r.res.Percentile(50)), ms(r.res.Percentile(99)), ms(r.res.Percentile(99.9)), r.res.Errors)
		}
	}
	return tw.Flush()
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
