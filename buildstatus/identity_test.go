package buildstatus

import (
	"testing"

	"pgregory.net/rapid"
)

func TestIdentityOf_MatchesFullDecode(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		doc := &PublishResponse{
			BuildID:   "550e8400-e29b-41d4-a716-446655440000",
			ProjectID: rapid.StringN(1, 40, -1).Draw(t, "project"),
			Status:    "IN_PROGRESS",
		}
		stored, err := Encode(doc)
		if err != nil {
			t.Fatal(err)
		}
		id, project, err := IdentityOf(stored)
		if err != nil || id != doc.BuildID || project != doc.ProjectID {
			t.Fatalf("IdentityOf(%s) = %q, %q, %v", stored, id, project, err)
		}
	})
}

func TestIdentityOf_ForeignFieldOrder(t *testing.T) {
	id, project, err := IdentityOf([]byte(`{"status":"X","projectId":"p\"q","buildId":"550e8400-e29b-41d4-a716-446655440000"}`))
	if err != nil || id != "550e8400-e29b-41d4-a716-446655440000" || project != `p"q` {
		t.Fatalf("IdentityOf = %q, %q, %v", id, project, err)
	}
	if _, _, err := IdentityOf([]byte(`not json`)); err == nil {
		t.Fatal("IdentityOf accepted garbage")
	}
}
