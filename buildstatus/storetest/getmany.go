package storetest

import (
	"bytes"
	"testing"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
)

func (s suite) getManyTests() []namedTest {
	return []namedTest{
		{"ReturnsExistingSkipsMissingAllowsDuplicates", s.testGetManyMixed},
		{"BatchLimit", s.testGetManyLimit},
	}
}

func (s suite) testGetManyMixed(t *testing.T) {
	st := s.store(t)
	saved := map[string]*buildstatus.Build{}
	for range 3 {
		id := NewBuildID()
		saved[id] = mustSave(t, st, SampleDoc(id, "p"))
	}
	var req []string
	for id := range saved {
		req = append(req, id, id) // duplicates
	}
	req = append(req, NewBuildID(), NewBuildID())
	got, err := st.GetMany(t.Context(), req)
	if err != nil {
		t.Fatalf("GetMany: %v", err)
	}
	if len(got) != len(saved) {
		t.Fatalf("GetMany returned %v, want exactly %v", mapKeys(got), mapKeys(saved))
	}
	for id, want := range saved {
		b := got[id]
		if b == nil {
			t.Fatalf("GetMany lacks %s", id)
		}
		checkBuild(t, b)
		if !bytes.Equal(b.JSON, want.JSON) || b.ETag() != want.ETag() {
			t.Fatalf("GetMany[%s] = %s, want %s", id, b.JSON, want.JSON)
		}
	}
	empty, err := st.GetMany(t.Context(), nil)
	if err != nil || len(empty) != 0 {
		t.Fatalf("GetMany(nil) = %v, %v; want empty, nil", empty, err)
	}
}

func (s suite) testGetManyLimit(t *testing.T) {
	st := s.store(t)
	id := NewBuildID()
	mustSave(t, st, SampleDoc(id, "p"))
	req := []string{id}
	for len(req) < buildstatus.MaxBatch {
		req = append(req, NewBuildID())
	}
	got, err := st.GetMany(t.Context(), req)
	if err != nil {
		t.Fatalf("GetMany of %d ids: %v", len(req), err)
	}
	if len(got) != 1 || got[id] == nil {
		t.Fatalf("GetMany of %d ids returned %v, want only %s", len(req), mapKeys(got), id)
	}
	_, err = st.GetMany(t.Context(), append(req, NewBuildID()))
	wantCode(t, err, redstate.EINVALID)
}
