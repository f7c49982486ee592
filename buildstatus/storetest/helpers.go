package storetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
)

// SampleJSON is a complete sample build document, every field present.
const SampleJSON = `{
  "buildId": "550e8400-e29b-41d4-a716-446655440000",
  "projectId": "test-project-001",
  "platforms": ["android", "ios"],
  "status": "IN_PROGRESS",
  "platformResults": {
    "android": {
      "platform": "android",
      "status": "SUCCESS",
      "progress": 100,
      "logUrl": null,
      "downloadUrl": "550e8400.../android/app.apk",
      "errorMessage": null,
      "startedAt": "2025-11-09T10:30:00",
      "completedAt": "2025-11-09T10:35:00"
    },
    "ios": {
      "platform": "ios",
      "status": "IN_PROGRESS",
      "progress": 50,
      "logUrl": null,
      "downloadUrl": null,
      "errorMessage": null,
      "startedAt": "2025-11-09T10:30:00",
      "completedAt": null
    }
  },
  "estimatedTime": 15,
  "createdAt": "2025-11-09T10:30:00",
  "updatedAt": "2025-11-09T10:33:00"
}`

// SampleDoc returns a fresh copy of the seed's example document with the given build and
// project ids (kept from the sample when empty).
func SampleDoc(buildID, projectID string) *buildstatus.PublishResponse {
	var doc buildstatus.PublishResponse
	if err := json.Unmarshal([]byte(SampleJSON), &doc); err != nil {
		panic("storetest: SampleJSON does not decode: " + err.Error())
	}
	if buildID != "" {
		doc.BuildID = buildID
	}
	if projectID != "" {
		doc.ProjectID = projectID
	}
	return &doc
}

// NewBuildID returns a random canonical build id.
func NewBuildID() string { return uuid.NewString() }

// sampleCompact is SampleJSON as stored: compact, fields in the seed's order.
func sampleCompact(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(SampleJSON)); err != nil {
		t.Fatalf("compact sample: %v", err)
	}
	return buf.Bytes()
}

func mustSave(t *testing.T, s buildstatus.Store, doc *buildstatus.PublishResponse) *buildstatus.Build {
	t.Helper()
	b, err := s.Save(t.Context(), doc, buildstatus.SaveOptions{})
	if err != nil {
		t.Fatalf("Save(%s): %v", doc.BuildID, err)
	}
	checkBuild(t, b)
	return b
}

func mustGet(t *testing.T, s buildstatus.Store, id string) *buildstatus.Build {
	t.Helper()
	b, err := s.Get(t.Context(), id)
	if err != nil {
		t.Fatalf("Get(%s): %v", id, err)
	}
	checkBuild(t, b)
	return b
}

// checkBuild verifies a returned Build is self-consistent: ETag of JSON, Doc decoded from JSON,
// JSON exactly as buildstatus.Encode writes Doc.
func checkBuild(t *testing.T, b *buildstatus.Build) {
	t.Helper()
	if b == nil || b.MustDoc() == nil {
		t.Fatalf("returned build or its Doc is nil: %+v", b)
	}
	if got := buildstatus.ETagOf(b.JSON); b.ETag() != got {
		t.Errorf("build %s: ETag %q, want ETagOf(JSON) %q", b.MustDoc().BuildID, b.ETag(), got)
	}
	enc, err := buildstatus.Encode(b.MustDoc())
	if err != nil {
		t.Fatalf("encode returned Doc: %v", err)
	}
	if !bytes.Equal(enc, b.JSON) {
		t.Errorf("build %s: JSON is not Encode(Doc)\n JSON: %s\n Doc:  %s", b.MustDoc().BuildID, b.JSON, enc)
	}
}

// wantCode fails unless err is a *redstate.Error with code.
func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got nil error, want %s", code)
	}
	var re *redstate.Error
	if !errors.As(err, &re) {
		t.Fatalf("got %T %v, want a *redstate.Error with code %s", err, err, code)
	}
	if re.Code != code {
		t.Fatalf("got error %v, want code %s", err, code)
	}
}

// eventually polls cond until it holds or waitFor passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", waitFor, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ids returns the build ids of a page's builds, in order.
func ids(builds []*buildstatus.Build) []string {
	out := make([]string, len(builds))
	for i, b := range builds {
		out[i] = b.MustDoc().BuildID
	}
	return out
}

func ptr[T any](v T) *T { return &v }
