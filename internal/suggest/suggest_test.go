package suggest

import "testing"

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"limit", "limit", 0}, {"limt", "limit", 1}, {"lmiit", "limit", 1},
		{"page", "size", 3}, {"", "abc", 3}, {"abc", "", 3}, {"kitten", "sitting", 3},
	} {
		if got := Distance(c.a, c.b); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestNear(t *testing.T) {
	known := []string{"readStatus", "size", "current", "cursor"}
	for name, want := range map[string]string{"limt": "", "page": "", "readstatus": "readStatus", "curent": "current", "cursr": "cursor", "sizes": "size"} {
		if got := Near(name, known); got != want {
			t.Errorf("Near(%q) = %q, want %q", name, got, want)
		}
	}
	if got := Near("limt", []string{"ids", "cursor", "limit"}); got != "limit" {
		t.Errorf("Near(limt) = %q, want limit", got)
	}
}

func TestClosest_FirstOfEqualDistanceWins(t *testing.T) {
	if got := Closest("ab", []string{"ax", "ay"}, 1); got != "ax" {
		t.Errorf("Closest = %q, want ax", got)
	}
	if got := Closest("abc", []string{"xyz"}, 2); got != "" {
		t.Errorf("Closest beyond maxDist = %q, want none", got)
	}
}
