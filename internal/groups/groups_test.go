package groups_test

import (
	"reflect"
	"testing"

	"github.com/redstate/redstate/internal/groups"
)

func TestBy_KeepsFirstAppearanceOrder(t *testing.T) {
	got := groups.By([]int{5, 2, 7, 4, 9, 6}, func(n int) int { return n % 2 })
	want := [][]int{{5, 7, 9}, {2, 4, 6}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("By = %v, want %v", got, want)
	}
	if got := groups.By([]string{}, func(s string) int { return len(s) }); len(got) != 0 {
		t.Fatalf("By of nothing = %v, want no groups", got)
	}
}

func TestIndexes(t *testing.T) {
	if got := groups.Indexes(4); !reflect.DeepEqual(got, []int{0, 1, 2, 3}) {
		t.Fatalf("Indexes(4) = %v", got)
	}
}
