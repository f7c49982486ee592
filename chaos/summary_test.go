//go:build chaos

package chaos

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// summaryKey is one line of the summary: a block under one fault on one topology.
type summaryKey struct{ block, topo, fault string }

// span is the range of a counter over the cycles (and modes) of one summary line.
type span struct {
	lo, hi int
	seen   bool
}

func (s *span) add(n int) {
	if n < 0 {
		return
	}
	if !s.seen || n < s.lo {
		s.lo = n
	}
	if !s.seen || n > s.hi {
		s.hi = n
	}
	s.seen = true
}

func (s span) String() string {
	switch {
	case !s.seen:
		return "–"
	case s.lo == s.hi:
		return fmt.Sprint(s.lo)
	}
	return fmt.Sprintf("%d–%d", s.lo, s.hi)
}

// summaryLine gathers the rows of one summaryKey.
type summaryLine struct {
	lost                                    map[string]*span // per mode
	stale, dups, conc, fences, diffs, stuck span
	recoveryLo, recoveryHi                  time.Duration
}

// summarize renders rows as the Markdown table of docs/resilience.md: per block, topology and
// fault, the acknowledged writes lost in each mode and the ranges of the other counters over
// every cycle and mode.
func summarize(rows []row) string {
	var order []summaryKey
	lines := map[summaryKey]*summaryLine{}
	for _, r := range rows {
		k := summaryKey{r.block, r.topo, r.fault}
		l := lines[k]
		if l == nil {
			l = &summaryLine{lost: map[string]*span{}, recoveryLo: r.recovery, recoveryHi: r.recovery}
			lines[k] = l
			order = append(order, k)
		}
		if l.lost[r.mode] == nil {
			l.lost[r.mode] = &span{}
		}
		l.lost[r.mode].add(r.lost)
		l.stale.add(r.stale)
		l.dups.add(r.dups)
		l.conc.add(r.concurrent)
		l.fences.add(r.fences)
		l.diffs.add(r.diffs)
		l.stuck.add(r.stuck)
		l.recoveryLo, l.recoveryHi = min(l.recoveryLo, r.recovery), max(l.recoveryHi, r.recovery)
	}
	var b strings.Builder
	b.WriteString("| block | topology | fault |")
	for _, m := range modes {
		fmt.Fprintf(&b, " lost (%s) |", m)
	}
	b.WriteString(" stale | dups | conc | fences | diffs | stuck | recovery |\n|---|---|---|")
	b.WriteString(strings.Repeat("---|", len(modes)+7) + "\n")
	for _, k := range order {
		l := lines[k]
		fmt.Fprintf(&b, "| %s | %s | %s |", k.block, k.topo, k.fault)
		for _, m := range modes {
			s := l.lost[m]
			if s == nil {
				s = &span{}
			}
			fmt.Fprintf(&b, " %s |", s)
		}
		fmt.Fprintf(&b, " %s | %s | %s | %s | %s | %s | %s |\n", l.stale, l.dups, l.conc, l.fences, l.diffs, l.stuck, durationSpan(l.recoveryLo, l.recoveryHi))
	}
	return b.String()
}

// summarizeHTTP renders the rows measured through serve (the http block) as a Markdown table,
// one line per phase: when the harness saw the promotion, when the first 2xx came after the
// last failure, the 503s, and the lines serve logged at Warn and above (Error in parentheses)
// from the fault to the end of the phase. "" when no row was measured through serve.
func summarizeHTTP(rows []row) string {
	var b strings.Builder
	for _, r := range rows {
		if r.warnLines < 0 {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("| topology | mode | fault | cycle | fault → promotion | fault → first 2xx | promotion → first 2xx | 503s | lines ≥ Warn (Error) |\n|---|---|---|---|---|---|---|---|---|\n")
		}
		promoted, after := "–", "–"
		if r.promoted >= 0 {
			promoted = fmt.Sprintf("%.2f s", r.promoted.Seconds())
			after = fmt.Sprintf("%.2f s", (r.recovery - r.promoted).Seconds())
		}
		if r.failed == 0 {
			after = "no failure"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %s | %.2f s | %s | %d | %d (%d) |\n", r.topo, r.mode, r.fault, r.cycle,
			promoted, r.recovery.Seconds(), after, r.failed, r.warnLines, r.errorLines)
	}
	return b.String()
}

// durationSpan prints a range of recovery times in seconds.
func durationSpan(lo, hi time.Duration) string {
	if lo.Round(100*time.Millisecond) == hi.Round(100*time.Millisecond) {
		return fmt.Sprintf("%.1f s", lo.Seconds())
	}
	return fmt.Sprintf("%.1f–%.1f s", lo.Seconds(), hi.Seconds())
}

// writeSummary logs the summary and appends it to the file $CHAOS_REPORT when set.
func writeSummary(t *testing.T, rows []row) {
	t.Helper()
	s := summarize(rows)
	if h := summarizeHTTP(rows); h != "" {
		s += "\n" + h
	}
	t.Log("\n" + s)
	path := os.Getenv("CHAOS_REPORT")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatalf("CHAOS_REPORT: %v", err)
	}
	defer func() { _ = f.Close() }()
	if _, err := fmt.Fprintf(f, "%s (%s, CHAOS_CYCLES=%d)\n\n%s\n", t.Name(), time.Now().UTC().Format(time.RFC3339), cycles(t), s); err != nil {
		t.Fatalf("CHAOS_REPORT: %v", err)
	}
}
