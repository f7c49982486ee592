package storetest

import (
	"fmt"
	"testing"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
)

func (s suite) listTests() []namedTest {
	return []namedTest{
		{"WalkSeesEveryBuild", s.testListWalk},
		{"EmptyStore", s.testListEmpty},
		{"RejectsBadCursorAndLimit", s.testListBadInput},
	}
}

// maxPages bounds every walk, so a cursor that never ends fails instead of hanging.
const maxPages = 10000

// listAll walks List to the end and returns every id seen, duplicates included.
func listAll(t *testing.T, st buildstatus.Store, limit int) []string {
	t.Helper()
	var out []string
	cursor := ""
	for range maxPages {
		page, err := st.List(t.Context(), cursor, limit)
		if err != nil {
			t.Fatalf("List(%q, %d): %v", cursor, limit, err)
		}
		for _, b := range page.Builds {
			checkBuild(t, b)
			out = append(out, b.MustDoc().BuildID)
		}
		if page.Cursor == "" {
			return out
		}
		cursor = page.Cursor
	}
	t.Fatalf("List(limit %d) did not end within %d pages", limit, maxPages)
	return nil
}

func (s suite) testListWalk(t *testing.T) {
	st := s.store(t)
	want := map[string]bool{}
	for i := range 250 {
		id := NewBuildID()
		mustSave(t, st, SampleDoc(id, fmt.Sprintf("project-%d", i%5)))
		want[id] = true
	}
	for _, limit := range []int{7, 100, 0, buildstatus.MaxListLimit} {
		seen := map[string]bool{}
		for _, id := range listAll(t, st, limit) {
			if !want[id] {
				t.Fatalf("List(limit %d) returned unknown build %s", limit, id)
			}
			seen[id] = true
		}
		if len(seen) != len(want) {
			t.Fatalf("List(limit %d) saw %d of %d builds", limit, len(seen), len(want))
		}
	}
}

func (s suite) testListEmpty(t *testing.T) {
	st := s.store(t)
	if got := listAll(t, st, 10); len(got) != 0 {
		t.Fatalf("List on an empty store returned %v", got)
	}
}

func (s suite) testListBadInput(t *testing.T) {
	st := s.store(t)
	for range 3 {
		mustSave(t, st, SampleDoc(NewBuildID(), "p"))
	}
	for _, cursor := range []string{"garbage!", "%%%", "-1", "\x00"} {
		_, err := st.List(t.Context(), cursor, 10)
		if !redstate.IsCode(err, redstate.EINVALID) {
			t.Errorf("List(cursor %q) error = %v, want %s", cursor, err, redstate.EINVALID)
		}
	}
	for _, limit := range []int{-1, buildstatus.MaxListLimit + 1} {
		_, err := st.List(t.Context(), "", limit)
		if !redstate.IsCode(err, redstate.EINVALID) {
			t.Errorf("List(limit %d) error = %v, want %s", limit, err, redstate.EINVALID)
		}
	}
}
