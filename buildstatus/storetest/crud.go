package storetest

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
)

func (s suite) crudTests() []namedTest {
	return []namedTest{
		{"SampleRoundTripIsByteExact", s.testSampleRoundTrip},
		{"ExistsGetDelete", s.testExistsGetDelete},
		{"ReturnedBuildsAreCopies", s.testReturnedBuildsAreCopies},
		{"NonCanonicalIDsAreInvalidForEveryMethod", s.testNonCanonicalIDs},
		{"InvalidDocumentsAreRejected", s.testInvalidDocuments},
	}
}

// testSampleRoundTrip stores the seed's sample and reads back exactly its compact bytes: nulls
// kept, date-times as ISO-8601 strings, fields in the seed's order.
func (s suite) testSampleRoundTrip(t *testing.T) {
	st := s.store(t)
	want := sampleCompact(t)
	saved := mustSave(t, st, SampleDoc("", ""))
	if !bytes.Equal(saved.JSON, want) {
		t.Fatalf("Save returned JSON\n %s\nwant\n %s", saved.JSON, want)
	}
	got := mustGet(t, st, "550e8400-e29b-41d4-a716-446655440000")
	if !bytes.Equal(got.JSON, want) {
		t.Fatalf("Get returned JSON\n %s\nwant\n %s", got.JSON, want)
	}
	if got.ETag() != saved.ETag() {
		t.Fatalf("Get ETag %q, Save ETag %q", got.ETag(), saved.ETag())
	}
	for _, frag := range []string{`"logUrl":null`, `"completedAt":null`, `"createdAt":"2025-11-09T10:30:00"`, `"updatedAt":"2025-11-09T10:33:00"`} {
		if !bytes.Contains(got.JSON, []byte(frag)) {
			t.Errorf("stored JSON lacks %s: %s", frag, got.JSON)
		}
	}
	if got.MustDoc().PlatformResults["ios"].CompletedAt != nil || got.MustDoc().PlatformResults["android"].LogURL != nil {
		t.Errorf("nulls did not decode as nil: %+v", got.MustDoc().PlatformResults)
	}
}

func (s suite) testExistsGetDelete(t *testing.T) {
	st := s.store(t)
	ctx := t.Context()
	id := NewBuildID()
	if ok, err := st.Exists(ctx, id); err != nil || ok {
		t.Fatalf("Exists before save = %v, %v; want false, nil", ok, err)
	}
	_, err := st.Get(ctx, id)
	wantCode(t, err, redstate.ENOTFOUND)
	saved := mustSave(t, st, SampleDoc(id, "p"))
	if saved.MustDoc().BuildID != id || saved.MustDoc().ProjectID != "p" {
		t.Fatalf("saved doc has ids %s/%s", saved.MustDoc().BuildID, saved.MustDoc().ProjectID)
	}
	if ok, err := st.Exists(ctx, id); err != nil || !ok {
		t.Fatalf("Exists after save = %v, %v; want true, nil", ok, err)
	}
	if got := mustGet(t, st, id); !bytes.Equal(got.JSON, saved.JSON) {
		t.Fatalf("Get JSON %s, want %s", got.JSON, saved.JSON)
	}
	if err := st.Delete(ctx, id, ""); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	_, err = st.Get(ctx, id)
	wantCode(t, err, redstate.ENOTFOUND)
	if ok, err := st.Exists(ctx, id); err != nil || ok {
		t.Fatalf("Exists after delete = %v, %v; want false, nil", ok, err)
	}
	_, err = st.TTL(ctx, id)
	wantCode(t, err, redstate.ENOTFOUND)
	wantCode(t, st.Delete(ctx, id, ""), redstate.ENOTFOUND)
	wantCode(t, st.Delete(ctx, NewBuildID(), ""), redstate.ENOTFOUND)
}

// testReturnedBuildsAreCopies checks that neither the caller's document nor a returned Build
// aliases the store's state.
func (s suite) testReturnedBuildsAreCopies(t *testing.T) {
	st := s.store(t)
	id := NewBuildID()
	doc := SampleDoc(id, "p")
	saved := mustSave(t, st, doc)
	want := bytes.Clone(saved.JSON)

	doc.Status = "MUTATED"
	doc.PlatformResults["ios"].Status = "MUTATED"
	saved.JSON[0] = 'X'
	saved.MustDoc().Platforms[0] = "mutated"
	got := mustGet(t, st, id)
	got.JSON[1] = 'X'
	got.MustDoc().PlatformResults["android"].Status = "MUTATED"
	many, err := st.GetMany(t.Context(), []string{id})
	if err != nil {
		t.Fatalf("GetMany: %v", err)
	}
	many[id].JSON[2] = 'X'

	if again := mustGet(t, st, id); !bytes.Equal(again.JSON, want) {
		t.Fatalf("stored value changed through a returned or passed value:\n %s\nwant\n %s", again.JSON, want)
	}
}

// nonCanonicalIDs are ids every method must reject with EINVALID.
func nonCanonicalIDs() map[string]string {
	return map[string]string{
		"uppercase":  "550E8400-E29B-41D4-A716-446655440000",
		"mixed case": "550e8400-E29B-41d4-a716-446655440000",
		"no hyphens": "550e8400e29b41d4a716446655440000",
		"braces":     "{550e8400-e29b-41d4-a716-446655440000}",
		"urn":        "urn:uuid:550e8400-e29b-41d4-a716-446655440000",
		"empty":      "",
		"glob":       "*",
		"garbage":    "not-a-uuid",
		"padded":     " 550e8400-e29b-41d4-a716-446655440000",
		"path":       "../../../../../../../../../etc/passwd0000",
		"key-ish":    "550e8400-e29b-41d4-a716-44665544000*",
	}
}

func (s suite) testNonCanonicalIDs(t *testing.T) {
	st := s.store(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	// The canonical twin of the uppercase id exists, so a backend that normalizes instead of
	// rejecting would find it.
	mustSave(t, st, SampleDoc("550e8400-e29b-41d4-a716-446655440000", "p"))
	result := &buildstatus.PlatformResult{Platform: "ios", Status: "SUCCESS", Progress: ptr(100)}
	for name, id := range nonCanonicalIDs() {
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
			_, err := st.Save(ctx, SampleDoc(id, "p"), buildstatus.SaveOptions{})
			if id == "" {
				// SampleDoc keeps the sample id for ""; build the doc explicitly.
				doc := SampleDoc("", "p")
				doc.BuildID = ""
				_, err = st.Save(ctx, doc, buildstatus.SaveOptions{})
			}
			wantCode(t, err, redstate.EINVALID)
			_, err = st.Get(ctx, id)
			wantCode(t, err, redstate.EINVALID)
			_, err = st.GetMany(ctx, []string{NewBuildID(), id})
			wantCode(t, err, redstate.EINVALID)
			_, err = st.Exists(ctx, id)
			wantCode(t, err, redstate.EINVALID)
			_, err = st.TTL(ctx, id)
			wantCode(t, err, redstate.EINVALID)
			wantCode(t, st.Delete(ctx, id, ""), redstate.EINVALID)
			_, err = st.UpdatePlatform(ctx, id, result, "")
			wantCode(t, err, redstate.EINVALID)
			_, err = st.Watch(ctx, id)
			wantCode(t, err, redstate.EINVALID)
		})
	}
	// Nothing above may have touched the canonical build.
	got := mustGet(t, st, "550e8400-e29b-41d4-a716-446655440000")
	if got.MustDoc().PlatformResults["ios"].Status != "IN_PROGRESS" {
		t.Fatalf("canonical build was modified through a non-canonical id: %s", got.JSON)
	}
}

func (s suite) testInvalidDocuments(t *testing.T) {
	st := s.store(t)
	ctx := t.Context()
	cases := map[string]func(d *buildstatus.PublishResponse){
		"empty projectId":        func(d *buildstatus.PublishResponse) { d.ProjectID = "" },
		"control char projectId": func(d *buildstatus.PublishResponse) { d.ProjectID = "a\nb" },
		"long projectId": func(d *buildstatus.PublishResponse) {
			d.ProjectID = strings.Repeat("x", buildstatus.MaxProjectIDBytes+1)
		},
		"empty status":      func(d *buildstatus.PublishResponse) { d.Status = "" },
		"bad platform":      func(d *buildstatus.PublishResponse) { d.Platforms = append(d.Platforms, "bad platform") },
		"progress over 100": func(d *buildstatus.PublishResponse) { d.PlatformResults["ios"].Progress = ptr(101) },
		"mismatched result": func(d *buildstatus.PublishResponse) { d.PlatformResults["ios"].Platform = "android" },
		"negative estimate": func(d *buildstatus.PublishResponse) { d.EstimatedTime = ptr(int64(-1)) },
	}
	for name, mutate := range cases {
		id := NewBuildID()
		doc := SampleDoc(id, "p")
		mutate(doc)
		_, err := st.Save(ctx, doc, buildstatus.SaveOptions{})
		if err == nil {
			t.Errorf("%s: Save succeeded, want EINVALID", name)
			continue
		}
		if code := redstate.ErrorCode(err); code != redstate.EINVALID {
			t.Errorf("%s: Save error %v, want code %s", name, err, redstate.EINVALID)
		}
		if ok, err := st.Exists(ctx, id); err != nil || ok {
			t.Errorf("%s: invalid document was stored (Exists = %v, %v)", name, ok, err)
		}
	}
	_, err := st.Save(ctx, nil, buildstatus.SaveOptions{})
	wantCode(t, err, redstate.EINVALID)
}
