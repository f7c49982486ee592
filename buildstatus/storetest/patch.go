package storetest

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
)

// patchTests run buildstatus.PatchPlatform (a merge patch over Get and a conditional
// UpdatePlatform) against the store.
func (s suite) patchTests() []namedTest {
	return []namedTest{
		{"KeepsMembersThePatchLeavesOut", s.testPatchPlatformKeepsOtherMembers},
		{"ConcurrentPatchesAreNotLost", s.testPatchPlatformConcurrent},
		{"IfMatch", s.testPatchPlatformIfMatch},
	}
}

// patchOf is a merge patch from members and their JSON values.
func patchOf(members map[string]string) map[string]json.RawMessage {
	p := make(map[string]json.RawMessage, len(members))
	for k, v := range members {
		p[k] = json.RawMessage(v)
	}
	return p
}

// testPatchPlatformKeepsOtherMembers: a patch changes only the members it names; null clears one.
func (s suite) testPatchPlatformKeepsOtherMembers(t *testing.T) {
	st := s.store(t)
	id := NewBuildID()
	mustSave(t, st, SampleDoc(id, "p"))
	ctx := t.Context()
	if _, err := buildstatus.PatchPlatform(ctx, st, id, "web", patchOf(map[string]string{"status": `"QUEUED"`, "logUrl": `"https://ci.example/web.log"`, "progress": "5"}), ""); err != nil {
		t.Fatal(err)
	}
	b, err := buildstatus.PatchPlatform(ctx, st, id, "web", patchOf(map[string]string{"progress": "null", "errorMessage": `"disk full"`}), "")
	if err != nil {
		t.Fatal(err)
	}
	web := b.MustDoc().PlatformResults["web"]
	if web.Status != "QUEUED" || web.LogURL == nil || *web.LogURL != "https://ci.example/web.log" || web.Progress != nil || web.ErrorMessage == nil || *web.ErrorMessage != "disk full" {
		t.Fatalf("web after two patches: %+v", web)
	}
	if got := mustGet(t, st, id); string(got.JSON) != string(b.JSON) {
		t.Fatalf("stored %s, patch answered %s", got.JSON, b.JSON)
	}
}

// testPatchPlatformConcurrent: writers patch different members of one platform and their own
// platforms at once; every member every writer set survives.
func (s suite) testPatchPlatformConcurrent(t *testing.T) {
	st := s.store(t)
	id := NewBuildID()
	mustSave(t, st, SampleDoc(id, "p"))
	members := map[string]string{"progress": "77", "logUrl": `"l"`, "downloadUrl": `"d"`, "errorMessage": `"e"`, "completedAt": `"2026-11-28T10:00:00"`}
	var wg sync.WaitGroup
	errs := make(chan error, len(members)+10)
	for name, v := range members {
		wg.Go(func() {
			if _, err := buildstatus.PatchPlatform(t.Context(), st, id, "ios", patchOf(map[string]string{name: v}), ""); err != nil {
				errs <- fmt.Errorf("patch of ios %s: %w", name, err)
			}
		})
	}
	for w := range 10 {
		wg.Go(func() {
			p := fmt.Sprintf("q%02d", w)
			if _, err := buildstatus.PatchPlatform(t.Context(), st, id, p, patchOf(map[string]string{"status": `"QUEUED"`, "logUrl": `"log"`}), ""); err != nil {
				errs <- fmt.Errorf("patch of %s: %w", p, err)
				return
			}
			if _, err := buildstatus.PatchPlatform(t.Context(), st, id, p, patchOf(map[string]string{"status": `"SUCCESS"`}), ""); err != nil {
				errs <- fmt.Errorf("second patch of %s: %w", p, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	doc := mustGet(t, st, id).MustDoc()
	ios, _ := json.Marshal(doc.PlatformResults["ios"])
	var got map[string]json.RawMessage
	_ = json.Unmarshal(ios, &got)
	for name, v := range members {
		if string(got[name]) != v {
			t.Errorf("ios.%s = %s, want %s (a concurrent patch was lost): %s", name, got[name], v, ios)
		}
	}
	for w := range 10 {
		p := doc.PlatformResults[fmt.Sprintf("q%02d", w)]
		if p == nil || p.Status != "SUCCESS" || p.LogURL == nil || *p.LogURL != "log" {
			t.Errorf("platform q%02d = %+v, want SUCCESS with its log", w, p)
		}
	}
}

// testPatchPlatformIfMatch: a patch with a stale ETag is EPRECONDITION and changes nothing.
func (s suite) testPatchPlatformIfMatch(t *testing.T) {
	st := s.store(t)
	id := NewBuildID()
	saved := mustSave(t, st, SampleDoc(id, "p"))
	if _, err := buildstatus.PatchPlatform(t.Context(), st, id, "ios", patchOf(map[string]string{"progress": "1"}), saved.ETag()); err != nil {
		t.Fatal(err)
	}
	_, err := buildstatus.PatchPlatform(t.Context(), st, id, "ios", patchOf(map[string]string{"progress": "2"}), saved.ETag())
	if !redstate.IsCode(err, redstate.EPRECONDITION) {
		t.Fatalf("patch with a stale ETag: %v, want EPRECONDITION", err)
	}
	if p := mustGet(t, st, id).MustDoc().PlatformResults["ios"].Progress; p == nil || *p != 1 {
		t.Fatalf("stale patch changed progress to %v", p)
	}
}
