package periodic

import (
	"testing"
	"time"

	"github.com/redstate/redstate/queue"
)

func mustParse(t *testing.T, expr, tz string) Entry {
	t.Helper()
	s, err := queue.ParseCron(expr, tz)
	if err != nil {
		t.Fatalf("ParseCron(%q, %q): %v", expr, tz, err)
	}
	return Entry{Name: "e", Schedule: s, Queue: "q"}
}

// TestTicks: the latest tick at or before a time and the next one after it, for five-field
// expressions, a leading seconds field, descriptors, @every (aligned to the Unix epoch, so
// every instance agrees), a timezone field and CRON_TZ=.
func TestTicks(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, c := range []struct {
		expr, tz, now, last, next string
	}{
		{"*/15 * * * *", "", "2025-01-15T10:31:07Z", "2025-01-15T10:30:00Z", "2025-01-15T10:45:00Z"},
		{"*/15 * * * *", "", "2025-01-15T10:30:00Z", "2025-01-15T10:30:00Z", "2025-01-15T10:45:00Z"},
		{"30 * * * * *", "", "2025-01-15T10:31:07Z", "2025-01-15T10:30:30Z", "2025-01-15T10:31:30Z"},
		{"@hourly", "", "2025-01-15T10:31:07Z", "2025-01-15T10:00:00Z", "2025-01-15T11:00:00Z"},
		{"@every 5m", "", "2025-01-15T10:31:07Z", "2025-01-15T10:30:00Z", "2025-01-15T10:35:00Z"},
		{"@every 7s", "", "1970-01-01T00:00:20Z", "1970-01-01T00:00:14Z", "1970-01-01T00:00:21Z"},
		{"0 3 * * *", "Europe/Paris", "2025-01-15T10:31:07Z", "2025-01-15T02:00:00Z", "2025-01-16T02:00:00Z"},
		{"CRON_TZ=America/New_York 0 3 * * *", "", "2025-01-15T10:31:07Z", "2025-01-15T08:00:00Z", "2025-01-16T08:00:00Z"},
		{"0 0 1 1 *", "", "2025-06-01T00:00:00Z", "2025-01-01T00:00:00Z", "2026-01-01T00:00:00Z"},
	} {
		e := mustParse(t, c.expr, c.tz)
		last := lastTick(e.Schedule, at(c.now))
		if !last.Equal(at(c.last)) {
			t.Errorf("%q in %q at %s: last tick %s, want %s", c.expr, c.tz, c.now, last.UTC(), c.last)
		}
		if next := nextTick(e.Schedule, last); !next.Equal(at(c.next)) {
			t.Errorf("%q in %q after %s: next tick %s, want %s", c.expr, c.tz, c.last, next.UTC(), c.next)
		}
	}
	if id := TickID("nightly", at("2025-01-15T02:00:00Z")); id != "cron:nightly:1736906400" {
		t.Errorf("TickID = %q", id)
	}
}

// TestParseCron_Refuses: bad expressions, unknown zones and two zones at once are refused.
func TestParseCron_Refuses(t *testing.T) {
	for _, c := range [][2]string{
		{"", ""}, {"* * *", ""}, {"61 * * * *", ""}, {"@fortnightly", ""}, {"* * * * *", "Mars/Olympus"},
		{"CRON_TZ=UTC * * * * *", "Europe/Paris"},
	} {
		if _, err := queue.ParseCron(c[0], c[1]); err == nil {
			t.Errorf("ParseCron(%q, %q) accepted", c[0], c[1])
		}
	}
}
