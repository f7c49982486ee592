package storetest

import (
	"bytes"
	"testing"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
)

func (s suite) conditionalTests() []namedTest {
	return []namedTest{
		{"IfMatchCurrentETagSucceeds", s.testIfMatchCurrent},
		{"IfMatchStaleETagFails", s.testIfMatchStale},
		{"IfMatchMissingBuildIsNotFound", s.testIfMatchMissing},
		{"IfNoneMatch", s.testIfNoneMatch},
		{"IfMatchAndIfNoneMatchOnExisting", s.testIfMatchAndIfNoneMatch},
		{"DeleteIfMatch", s.testDeleteIfMatch},
		{"ProjectIDNeverChanges", s.testProjectIDNeverChanges},
		{"FailedConditionWithTheStoredBytesStillFails", s.testConditionWithSameBytes},
	}
}

// testConditionWithSameBytes: a condition is about the stored value, not about what the save
// would write: a second create of a build with the very same document, and a save of the very
// same document with a stale ETag, are both EPRECONDITION (a re-send of one call is told apart
// by its call marker, not by its bytes; see redisstore's saveScript).
func (s suite) testConditionWithSameBytes(t *testing.T) {
	st := s.store(t)
	id := NewBuildID()
	doc := SampleDoc(id, "p")
	if _, err := st.Save(t.Context(), doc, buildstatus.SaveOptions{IfNoneMatch: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Save(t.Context(), doc, buildstatus.SaveOptions{IfNoneMatch: true}); !redstate.IsCode(err, redstate.EPRECONDITION) {
		t.Fatalf("a second create of the same document: %v, want EPRECONDITION", err)
	}
	if _, err := st.Save(t.Context(), doc, buildstatus.SaveOptions{IfMatch: "0000000000000000000000000000000000000000"}); !redstate.IsCode(err, redstate.EPRECONDITION) {
		t.Fatalf("the same document with a stale ETag: %v, want EPRECONDITION", err)
	}
}

func (s suite) testIfMatchCurrent(t *testing.T) {
	st := s.store(t)
	id := NewBuildID()
	first := mustSave(t, st, SampleDoc(id, "p"))
	doc := SampleDoc(id, "p")
	doc.Status = "SUCCESS"
	second, err := st.Save(t.Context(), doc, buildstatus.SaveOptions{IfMatch: first.ETag()})
	if err != nil {
		t.Fatalf("Save with current ETag: %v", err)
	}
	checkBuild(t, second)
	if second.ETag() == first.ETag() {
		t.Fatalf("ETag did not change with the value (%s)", second.ETag())
	}
	if got := mustGet(t, st, id); got.ETag() != second.ETag() || got.MustDoc().Status != "SUCCESS" {
		t.Fatalf("Get after conditional save: ETag %s status %s; want %s SUCCESS", got.ETag(), got.MustDoc().Status, second.ETag())
	}
}

func (s suite) testIfMatchStale(t *testing.T) {
	st := s.store(t)
	id := NewBuildID()
	first := mustSave(t, st, SampleDoc(id, "p"))
	doc := SampleDoc(id, "p")
	doc.Status = "SUCCESS"
	current := mustSave(t, st, doc)
	doc.Status = "FAILED"
	_, err := st.Save(t.Context(), doc, buildstatus.SaveOptions{IfMatch: first.ETag()})
	wantCode(t, err, redstate.EPRECONDITION)
	_, err = st.Save(t.Context(), doc, buildstatus.SaveOptions{IfMatch: "not-an-etag"})
	wantCode(t, err, redstate.EPRECONDITION)
	if got := mustGet(t, st, id); !bytes.Equal(got.JSON, current.JSON) {
		t.Fatalf("failed conditional save changed the value: %s", got.JSON)
	}
}

func (s suite) testIfMatchMissing(t *testing.T) {
	st := s.store(t)
	id := NewBuildID()
	_, err := st.Save(t.Context(), SampleDoc(id, "p"), buildstatus.SaveOptions{IfMatch: buildstatus.ETagOf([]byte("x"))})
	wantCode(t, err, redstate.ENOTFOUND)
	if ok, _ := st.Exists(t.Context(), id); ok {
		t.Fatal("failed IfMatch save created the build")
	}
}

func (s suite) testIfNoneMatch(t *testing.T) {
	st := s.store(t)
	id := NewBuildID()
	created, err := st.Save(t.Context(), SampleDoc(id, "p"), buildstatus.SaveOptions{IfNoneMatch: true})
	if err != nil {
		t.Fatalf("IfNoneMatch save of a new build: %v", err)
	}
	doc := SampleDoc(id, "p")
	doc.Status = "SUCCESS"
	_, err = st.Save(t.Context(), doc, buildstatus.SaveOptions{IfNoneMatch: true})
	wantCode(t, err, redstate.EPRECONDITION)
	if got := mustGet(t, st, id); got.ETag() != created.ETag() {
		t.Fatalf("failed IfNoneMatch save changed the value: %s", got.JSON)
	}
}

func (s suite) testDeleteIfMatch(t *testing.T) {
	st := s.store(t)
	ctx := t.Context()
	id := NewBuildID()
	first := mustSave(t, st, SampleDoc(id, "p"))
	doc := SampleDoc(id, "p")
	doc.Status = "SUCCESS"
	current := mustSave(t, st, doc)
	wantCode(t, st.Delete(ctx, id, first.ETag()), redstate.EPRECONDITION)
	if ok, _ := st.Exists(ctx, id); !ok {
		t.Fatal("Delete with a stale ETag removed the build")
	}
	if err := st.Delete(ctx, id, current.ETag()); err != nil {
		t.Fatalf("Delete with the current ETag: %v", err)
	}
	if ok, _ := st.Exists(ctx, id); ok {
		t.Fatal("build exists after Delete")
	}
	wantCode(t, st.Delete(ctx, id, current.ETag()), redstate.ENOTFOUND)
}

func (s suite) testProjectIDNeverChanges(t *testing.T) {
	st := s.store(t)
	ctx := t.Context()
	id := NewBuildID()
	first := mustSave(t, st, SampleDoc(id, "alpha"))
	_, err := st.Save(ctx, SampleDoc(id, "beta"), buildstatus.SaveOptions{})
	wantCode(t, err, redstate.ECONFLICT)
	_, err = st.Save(ctx, SampleDoc(id, "beta"), buildstatus.SaveOptions{IfMatch: first.ETag()})
	wantCode(t, err, redstate.ECONFLICT)
	if got := mustGet(t, st, id); got.ETag() != first.ETag() {
		t.Fatalf("conflicting save changed the value: %s", got.JSON)
	}
	page, err := st.ListProject(ctx, "beta", "", 10)
	if err != nil {
		t.Fatalf("ListProject(beta): %v", err)
	}
	if len(page.Builds) != 0 {
		t.Fatalf("conflicting save indexed the build under the new project: %v", ids(page.Builds))
	}
	// After a delete the id is free again, for any project.
	if err := st.Delete(ctx, id, ""); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	mustSave(t, st, SampleDoc(id, "beta"))
}

// testIfMatchAndIfNoneMatch: both conditions must hold. On an existing build IfNoneMatch fails
// even when IfMatch names its current ETag.
func (s suite) testIfMatchAndIfNoneMatch(t *testing.T) {
	st := s.store(t)
	id := NewBuildID()
	first := mustSave(t, st, SampleDoc(id, "p"))
	doc := SampleDoc(id, "p")
	doc.Status = "SUCCESS"
	_, err := st.Save(t.Context(), doc, buildstatus.SaveOptions{IfMatch: first.ETag(), IfNoneMatch: true})
	wantCode(t, err, redstate.EPRECONDITION)
	if got := mustGet(t, st, id); got.ETag() != first.ETag() {
		t.Fatalf("failed IfMatch+IfNoneMatch save changed the value: %s", got.JSON)
	}
}
