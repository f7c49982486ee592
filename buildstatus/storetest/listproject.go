package storetest

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
)

func (s suite) listProjectTests() []namedTest {
	return []namedTest{
		{"NewestFirstTiesByBuildIDDescending", s.testListProjectOrder},
		{"PaginationReturnsEachBuildOnce", s.testListProjectPagination},
		{"NullCreatedAtUsesSaveTime", s.testListProjectNullCreatedAt},
		{"DeletedBuildsNeverAppear", s.testListProjectDeleted},
		{"HostileProjectIDsDoNotWiden", s.testListProjectHostile},
		{"RejectsBadInput", s.testListProjectBadInput},
	}
}

// listProjectAll walks ListProject to the end and returns the ids in listing order.
func listProjectAll(t *testing.T, st buildstatus.Store, project string, limit int) []string {
	t.Helper()
	var out []string
	cursor := ""
	for range maxPages {
		page, err := st.ListProject(t.Context(), project, cursor, limit)
		if err != nil {
			t.Fatalf("ListProject(%q, %q, %d): %v", project, cursor, limit, err)
		}
		if len(page.Builds) > max(limit, 1) && limit != 0 {
			t.Fatalf("ListProject(limit %d) returned %d builds", limit, len(page.Builds))
		}
		for _, b := range page.Builds {
			checkBuild(t, b)
			if b.MustDoc().ProjectID != project {
				t.Fatalf("ListProject(%q) returned build %s of project %q", project, b.MustDoc().BuildID, b.MustDoc().ProjectID)
			}
			out = append(out, b.MustDoc().BuildID)
		}
		if page.Cursor == "" {
			return out
		}
		cursor = page.Cursor
	}
	t.Fatalf("ListProject(%q, limit %d) did not end within %d pages", project, limit, maxPages)
	return nil
}

// listed is a build and its listing key.
type listed struct {
	id    string
	score int64
}

// expectedOrder sorts builds the way ListProject must: score descending, then id descending.
func expectedOrder(builds []listed) []string {
	slices.SortFunc(builds, func(a, b listed) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return strings.Compare(b.id, a.id)
	})
	out := make([]string, len(builds))
	for i, b := range builds {
		out[i] = b.id
	}
	return out
}

// docCreatedAt returns a sample document created at the given ISO-8601 date-time.
func docCreatedAt(t *testing.T, id, project, createdAt string) *buildstatus.PublishResponse {
	t.Helper()
	doc := SampleDoc(id, project)
	dt, err := buildstatus.ParseDateTime(createdAt)
	if err != nil {
		t.Fatalf("parse %s: %v", createdAt, err)
	}
	doc.CreatedAt = &dt
	return doc
}

func (s suite) testListProjectOrder(t *testing.T) {
	st := s.store(t)
	const project = "ordered"
	createdAts := []string{
		"2025-11-09T10:30:00", "2025-11-09T10:30:00", "2025-11-09T10:30:00", // exact ties
		"2025-11-09T10:30:00.0001", "2025-11-09T10:30:00.0002", // same millisecond
		"2025-11-09T10:31:00", "2025-11-09T09:00:00", "2025-11-10T00:00:00",
		"2025-11-09T18:45:00+08:00", // 10:45 UTC
		"2024-01-01T00:00:00Z",
	}
	var builds []listed
	for _, at := range createdAts {
		id := NewBuildID()
		doc := docCreatedAt(t, id, project, at)
		mustSave(t, st, doc)
		builds = append(builds, listed{id, buildstatus.ProjectScore(doc, time.Time{})})
	}
	mustSave(t, st, SampleDoc(NewBuildID(), "other"))
	want := expectedOrder(builds)
	for _, limit := range []int{0, 1, 3, buildstatus.MaxListLimit} {
		if got := listProjectAll(t, st, project, limit); !slices.Equal(got, want) {
			t.Fatalf("ListProject(limit %d) order\n got  %v\n want %v", limit, got, want)
		}
	}
}

func (s suite) testListProjectPagination(t *testing.T) {
	st := s.store(t)
	const project = "paged"
	base := time.Date(2025, 11, 9, 10, 30, 0, 0, time.UTC)
	var builds []listed
	for i := range 23 {
		id := NewBuildID()
		// Every third build shares its createdAt with the previous one.
		at := base.Add(time.Duration(i-i/3) * time.Minute)
		doc := SampleDoc(id, project)
		doc.CreatedAt = buildstatus.NewLocalDateTime(at)
		mustSave(t, st, doc)
		builds = append(builds, listed{id, at.UnixMilli()})
	}
	want := expectedOrder(builds)
	for _, limit := range []int{1, 4, 22, 23, 24} {
		got := listProjectAll(t, st, project, limit)
		if !slices.Equal(got, want) {
			t.Fatalf("ListProject(limit %d)\n got  %v\n want %v", limit, got, want)
		}
	}
	// A page ends where the next begins: resuming from the first page's cursor.
	first, err := st.ListProject(t.Context(), project, "", 5)
	if err != nil {
		t.Fatalf("ListProject: %v", err)
	}
	if !slices.Equal(ids(first.Builds), want[:5]) || first.Cursor == "" {
		t.Fatalf("first page %v cursor %q, want %v and a cursor", ids(first.Builds), first.Cursor, want[:5])
	}
	second, err := st.ListProject(t.Context(), project, first.Cursor, 5)
	if err != nil {
		t.Fatalf("ListProject(cursor): %v", err)
	}
	if !slices.Equal(ids(second.Builds), want[5:10]) {
		t.Fatalf("second page %v, want %v", ids(second.Builds), want[5:10])
	}
}

func (s suite) testListProjectNullCreatedAt(t *testing.T) {
	st := s.store(t)
	const project = "nulls"
	now := time.Now()
	older, undated, newer := NewBuildID(), NewBuildID(), NewBuildID()
	doc := SampleDoc(older, project)
	doc.CreatedAt = buildstatus.NewLocalDateTime(now.Add(-time.Hour))
	mustSave(t, st, doc)
	doc = SampleDoc(undated, project)
	doc.CreatedAt = nil
	saved := mustSave(t, st, doc)
	if saved.MustDoc().CreatedAt != nil {
		t.Fatalf("a null createdAt was stored as %v; nulls are kept", saved.MustDoc().CreatedAt)
	}
	doc = SampleDoc(newer, project)
	doc.CreatedAt = buildstatus.NewLocalDateTime(now.Add(time.Hour))
	mustSave(t, st, doc)
	want := []string{newer, undated, older}
	if got := listProjectAll(t, st, project, 0); !slices.Equal(got, want) {
		t.Fatalf("ListProject with a null createdAt\n got  %v\n want %v (newer, undated, older)", got, want)
	}
}

func (s suite) testListProjectDeleted(t *testing.T) {
	st := s.store(t)
	const project = "deleting"
	var keep []listed
	for i := range 6 {
		id := NewBuildID()
		doc := SampleDoc(id, project)
		doc.CreatedAt = buildstatus.NewLocalDateTime(time.Date(2025, 1, 1, 0, i, 0, 0, time.UTC))
		mustSave(t, st, doc)
		if i%2 == 0 {
			if err := st.Delete(t.Context(), id, ""); err != nil {
				t.Fatalf("Delete: %v", err)
			}
			continue
		}
		keep = append(keep, listed{id, buildstatus.ProjectScore(doc, time.Time{})})
	}
	want := expectedOrder(keep)
	for _, limit := range []int{1, 2, 100} {
		if got := listProjectAll(t, st, project, limit); !slices.Equal(got, want) {
			t.Fatalf("ListProject(limit %d) after deletes\n got  %v\n want %v", limit, got, want)
		}
	}
}

// HostileProjectIDs are project ids that are glob patterns, key separators, hash tags or
// escapes: each must list exactly its own builds.
var HostileProjectIDs = []string{
	"*", "?", "[", "]", ":", "{", "}", "a*", "a", "a:b", "a:b:builds", "{a}", "\\", "%2A", "项目",
	"a:builds", "[a-z]", "a\\*", "{}", "project:a", "*:builds",
}

func (s suite) testListProjectHostile(t *testing.T) {
	st := s.store(t)
	owned := map[string][]string{}
	for _, p := range HostileProjectIDs {
		for range 2 {
			id := NewBuildID()
			mustSave(t, st, SampleDoc(id, p))
			owned[p] = append(owned[p], id)
		}
	}
	for _, p := range HostileProjectIDs {
		for _, limit := range []int{1, 100} {
			got := listProjectAll(t, st, p, limit)
			slices.Sort(got)
			want := slices.Sorted(slices.Values(owned[p]))
			if !slices.Equal(got, want) {
				t.Errorf("ListProject(%q, limit %d) = %v, want exactly its own builds %v", p, limit, got, want)
			}
		}
	}
	for _, p := range []string{"b", "**", "a:b:c", "项"} {
		if got := listProjectAll(t, st, p, 100); len(got) != 0 {
			t.Errorf("ListProject(%q) of an unused project = %v, want none", p, got)
		}
	}
}

func (s suite) testListProjectBadInput(t *testing.T) {
	st := s.store(t)
	id := NewBuildID()
	mustSave(t, st, SampleDoc(id, "p"))
	ctx := t.Context()
	cases := []struct {
		project, cursor string
		limit           int
	}{
		{"", "", 10},
		{"a\x00b", "", 10},
		{"a\nb", "", 10},
		{strings.Repeat("x", buildstatus.MaxProjectIDBytes+1), "", 10},
		{"p", "", -1},
		{"p", "", buildstatus.MaxListLimit + 1},
		{"p", "garbage!", 10},
		{"p", buildstatus.ProjectCursor{Score: 1, BuildID: "not-a-uuid"}.Encode(), 10},
	}
	for _, c := range cases {
		_, err := st.ListProject(ctx, c.project, c.cursor, c.limit)
		if !redstate.IsCode(err, redstate.EINVALID) {
			t.Errorf("ListProject(%q, %q, %d) error = %v, want %s", truncateForLog(c.project), c.cursor, c.limit, err, redstate.EINVALID)
		}
	}
}

func truncateForLog(s string) string {
	if len(s) > 20 {
		return fmt.Sprintf("%s...(%d bytes)", s[:20], len(s))
	}
	return s
}
