package storetest

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
)

func (s suite) updatePlatformTests() []namedTest {
	return []namedTest{
		{"ChangesOnlyThatPlatform", s.testUpdatePlatformChangesOnlyThatPlatform},
		{"AddsNewPlatform", s.testUpdatePlatformAddsPlatform},
		{"MissingBuildIsNotFound", s.testUpdatePlatformMissing},
		{"RejectsInvalidResult", s.testUpdatePlatformInvalid},
		{"IfMatch", s.testUpdatePlatformIfMatch},
		{"ConcurrentUpdatesAreNotLost", s.testUpdatePlatformConcurrent},
		{"CannotGrowPastMaxDocumentBytes", s.testUpdatePlatformSizeCap},
	}
}

// testUpdatePlatformSizeCap grows one build by platform updates, each valid on its own, until
// the document would pass buildstatus.MaxDocumentBytes: that update is ETOOLARGE and the
// stored document stays as it was.
func (s suite) testUpdatePlatformSizeCap(t *testing.T) {
	st := s.store(t)
	id := NewBuildID()
	mustSave(t, st, SampleDoc(id, "p"))
	text := strings.Repeat("x", buildstatus.MaxTextBytes)
	var last *buildstatus.Build
	for i := range buildstatus.MaxPlatforms {
		result := &buildstatus.PlatformResult{Platform: fmt.Sprintf("p%02d", i), Status: "FAILED",
			LogURL: ptr("logs/" + text[:buildstatus.MaxTextBytes-5]), DownloadURL: ptr(text), ErrorMessage: ptr(text)}
		b, err := st.UpdatePlatform(t.Context(), id, result, "")
		if err != nil {
			wantCode(t, err, redstate.ETOOLARGE)
			if last == nil {
				t.Fatal("the first update was already too large")
			}
			if stored := mustGet(t, st, id); !bytes.Equal(stored.JSON, last.JSON) {
				t.Fatal("a refused update changed the stored document")
			}
			return
		}
		if len(b.JSON) > buildstatus.MaxDocumentBytes {
			t.Fatalf("stored a %d-byte document, over the %d limit", len(b.JSON), buildstatus.MaxDocumentBytes)
		}
		last = b
	}
	t.Fatalf("%d platform updates of 24 KB each never reached the size limit", buildstatus.MaxPlatforms)
}

// checkUpdated verifies got is prev with result applied and a fresh updatedAt.
func checkUpdated(t *testing.T, prev, got *buildstatus.Build, result *buildstatus.PlatformResult, before, after time.Time) {
	t.Helper()
	checkBuild(t, got)
	u := got.MustDoc().UpdatedAt
	if u == nil || u.Zoned {
		t.Fatalf("updatedAt = %v, want a zone-less date-time", u)
	}
	if u.Time.Before(before.Add(-time.Second)) || u.Time.After(after.Add(time.Second)) {
		t.Fatalf("updatedAt = %v, want between %v and %v", u, before.UTC(), after.UTC())
	}
	want, err := buildstatus.Encode(buildstatus.ApplyPlatformResult(prev.MustDoc(), result, u.Time))
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	if !bytes.Equal(got.JSON, want) {
		t.Fatalf("UpdatePlatform stored\n %s\nwant\n %s", got.JSON, want)
	}
}

func (s suite) testUpdatePlatformChangesOnlyThatPlatform(t *testing.T) {
	st := s.store(t)
	id := NewBuildID()
	prev := mustSave(t, st, SampleDoc(id, "p"))
	result := &buildstatus.PlatformResult{
		Platform: "ios", Status: "SUCCESS", Progress: ptr(100),
		DownloadURL: ptr(id + "/ios/app.ipa"),
		StartedAt:   prev.MustDoc().PlatformResults["ios"].StartedAt,
		CompletedAt: buildstatus.NewLocalDateTime(time.Now()),
	}
	before := time.Now()
	got, err := st.UpdatePlatform(t.Context(), id, result, "")
	if err != nil {
		t.Fatalf("UpdatePlatform: %v", err)
	}
	checkUpdated(t, prev, got, result, before, time.Now())
	if !slices.Equal(got.MustDoc().Platforms, []string{"android", "ios"}) {
		t.Fatalf("platforms = %v, want unchanged [android ios]", got.MustDoc().Platforms)
	}
	if stored := mustGet(t, st, id); !bytes.Equal(stored.JSON, got.JSON) || stored.ETag() != got.ETag() {
		t.Fatalf("Get after UpdatePlatform = %s, want %s", stored.JSON, got.JSON)
	}
}

func (s suite) testUpdatePlatformAddsPlatform(t *testing.T) {
	st := s.store(t)
	id := NewBuildID()
	prev := mustSave(t, st, SampleDoc(id, "p"))
	result := &buildstatus.PlatformResult{Platform: "wechat-mp", Status: "QUEUED", Progress: ptr(0)}
	before := time.Now()
	got, err := st.UpdatePlatform(t.Context(), id, result, prev.ETag())
	if err != nil {
		t.Fatalf("UpdatePlatform: %v", err)
	}
	checkUpdated(t, prev, got, result, before, time.Now())
	if !slices.Equal(got.MustDoc().Platforms, []string{"android", "ios", "wechat-mp"}) {
		t.Fatalf("platforms = %v, want the new platform appended", got.MustDoc().Platforms)
	}
	// Updating it again does not list it twice.
	again, err := st.UpdatePlatform(t.Context(), id, &buildstatus.PlatformResult{Platform: "wechat-mp", Status: "SUCCESS"}, "")
	if err != nil {
		t.Fatalf("UpdatePlatform: %v", err)
	}
	if !slices.Equal(again.MustDoc().Platforms, []string{"android", "ios", "wechat-mp"}) {
		t.Fatalf("platforms = %v after a second update", again.MustDoc().Platforms)
	}
}

func (s suite) testUpdatePlatformMissing(t *testing.T) {
	st := s.store(t)
	id := NewBuildID()
	_, err := st.UpdatePlatform(t.Context(), id, &buildstatus.PlatformResult{Platform: "ios", Status: "SUCCESS"}, "")
	wantCode(t, err, redstate.ENOTFOUND)
	if ok, _ := st.Exists(t.Context(), id); ok {
		t.Fatal("UpdatePlatform of a missing build created it")
	}
}

func (s suite) testUpdatePlatformInvalid(t *testing.T) {
	st := s.store(t)
	id := NewBuildID()
	prev := mustSave(t, st, SampleDoc(id, "p"))
	cases := map[string]*buildstatus.PlatformResult{
		"nil":               nil,
		"empty platform":    {Platform: "", Status: "SUCCESS"},
		"bad platform":      {Platform: "i os", Status: "SUCCESS"},
		"glob platform":     {Platform: "*", Status: "SUCCESS"},
		"empty status":      {Platform: "ios", Status: ""},
		"progress over 100": {Platform: "ios", Status: "SUCCESS", Progress: ptr(101)},
		"negative progress": {Platform: "ios", Status: "SUCCESS", Progress: ptr(-1)},
	}
	for name, r := range cases {
		_, err := st.UpdatePlatform(t.Context(), id, r, "")
		if !redstate.IsCode(err, redstate.EINVALID) {
			t.Errorf("%s: UpdatePlatform error = %v, want %s", name, err, redstate.EINVALID)
		}
	}
	if got := mustGet(t, st, id); got.ETag() != prev.ETag() {
		t.Fatalf("rejected updates changed the build: %s", got.JSON)
	}
}

func (s suite) testUpdatePlatformIfMatch(t *testing.T) {
	st := s.store(t)
	id := NewBuildID()
	first := mustSave(t, st, SampleDoc(id, "p"))
	second, err := st.UpdatePlatform(t.Context(), id, &buildstatus.PlatformResult{Platform: "ios", Status: "BUILDING", Progress: ptr(60)}, first.ETag())
	if err != nil {
		t.Fatalf("UpdatePlatform with the current ETag: %v", err)
	}
	if second.ETag() == first.ETag() {
		t.Fatal("ETag unchanged by UpdatePlatform")
	}
	_, err = st.UpdatePlatform(t.Context(), id, &buildstatus.PlatformResult{Platform: "ios", Status: "FAILED"}, first.ETag())
	wantCode(t, err, redstate.EPRECONDITION)
	if got := mustGet(t, st, id); got.ETag() != second.ETag() {
		t.Fatalf("stale UpdatePlatform changed the build: %s", got.JSON)
	}
}

// testUpdatePlatformConcurrent runs 50 writers, each updating its own platform of one build
// several times; every writer's last value must survive.
func (s suite) testUpdatePlatformConcurrent(t *testing.T) {
	const writers, rounds = 50, 4
	st := s.store(t)
	id := NewBuildID()
	mustSave(t, st, SampleDoc(id, "p"))
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for r := 1; r <= rounds; r++ {
				res := &buildstatus.PlatformResult{
					Platform: fmt.Sprintf("p%02d", w),
					Status:   fmt.Sprintf("ROUND_%d", r),
					Progress: ptr(r * 100 / rounds),
					LogURL:   ptr(fmt.Sprintf("w%d-r%d", w, r)),
				}
				if _, err := st.UpdatePlatform(t.Context(), id, res, ""); err != nil {
					errs <- fmt.Errorf("writer %d round %d: %w", w, r, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got := mustGet(t, st, id)
	wantPlatforms := []string{"android", "ios"}
	for w := range writers {
		p := fmt.Sprintf("p%02d", w)
		wantPlatforms = append(wantPlatforms, p)
		r := got.MustDoc().PlatformResults[p]
		if r == nil {
			t.Errorf("update of platform %s was lost", p)
			continue
		}
		if r.Status != fmt.Sprintf("ROUND_%d", rounds) || r.LogURL == nil || *r.LogURL != fmt.Sprintf("w%d-r%d", w, rounds) {
			t.Errorf("platform %s = %s/%v, want writer %d's last round", p, r.Status, r.LogURL, w)
		}
	}
	slices.Sort(wantPlatforms)
	gotPlatforms := slices.Sorted(slices.Values(got.MustDoc().Platforms))
	if !slices.Equal(gotPlatforms, wantPlatforms) {
		t.Errorf("platforms = %v, want each of %v once", got.MustDoc().Platforms, wantPlatforms)
	}
	if got.MustDoc().PlatformResults["android"].Status != "SUCCESS" || got.MustDoc().PlatformResults["ios"].Status != "IN_PROGRESS" {
		t.Errorf("untouched platforms changed: %s", got.JSON)
	}
}
