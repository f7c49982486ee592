package mysqlsource

import (
	"reflect"
	"testing"
)

// TestRenames: an image's names the table lost pair with the names it gained in the same
// place; added, dropped or moved columns pair with nothing.
func TestRenames(t *testing.T) {
	cols := func(names ...string) []column {
		out := make([]column, len(names))
		for i, n := range names {
			out[i] = column{Name: n}
		}
		return out
	}
	for _, tc := range []struct {
		name         string
		image, table []string
		want         map[string]string
	}{
		{"same", []string{"id", "cat"}, []string{"id", "cat"}, nil},
		{"no names in the log", nil, []string{"id", "cat"}, nil},
		{"renamed", []string{"id", "cat", "yn"}, []string{"id", "category", "yn"}, map[string]string{"cat": "category"}},
		{"renamed last", []string{"id", "cat"}, []string{"id", "category"}, map[string]string{"cat": "category"}},
		{"renamed and added at the end", []string{"id", "cat", "yn"}, []string{"id", "category", "yn", "note"}, map[string]string{"cat": "category"}},
		{"added in the middle", []string{"id", "cat", "yn"}, []string{"id", "extra", "cat", "yn"}, nil},
		{"renamed beside an added one", []string{"id", "cat", "yn"}, []string{"id", "extra", "category", "yn"}, nil},
		{"two renamed", []string{"id", "a", "b"}, []string{"id", "x", "y"}, map[string]string{"a": "x", "b": "y"}},
		{"dropped", []string{"id", "cat", "yn"}, []string{"id", "yn"}, nil},
		{"moved", []string{"id", "cat", "yn"}, []string{"id", "yn", "cat"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := renames(tc.image, cols(tc.table...)); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("renames(%v, %v) = %v, want %v", tc.image, tc.table, got, tc.want)
			}
		})
	}
}
