package resilientstore

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/internal/resilience"
	"github.com/redstate/redstate/metrics"
)

// TestFallbackAudit_ConditionalWritesOfNonPendingIDsAreUnavailable: docs/resilience.md's
// fallback table — If-Match Save and If-Match Delete of an id that is not pending cannot be
// checked while Redis is down (EUNAVAILABLE), while an unconditional Delete of a build that
// never existed records a tombstone and succeeds.
func TestFallbackAudit_ConditionalWritesOfNonPendingIDsAreUnavailable(t *testing.T) {
	f := newFixture(t, testConfig(resilience.PolicyFallback, time.Hour))
	ctx := context.Background()
	stored := newID()
	b, err := f.raw.Save(ctx, doc(stored, nil), buildstatus.SaveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f.flaky.down.Store(true)
	if _, err := f.s.Save(ctx, doc(stored, nil), buildstatus.SaveOptions{IfMatch: b.ETag()}); !redstate.IsCode(err, redstate.EUNAVAILABLE) {
		t.Fatalf("If-Match Save of a non-pending id while down = %v, want EUNAVAILABLE", err)
	}
	if err := f.s.Delete(ctx, stored, b.ETag()); !redstate.IsCode(err, redstate.EUNAVAILABLE) {
		t.Fatalf("If-Match Delete of a non-pending id while down = %v, want EUNAVAILABLE", err)
	}
	if n := f.s.Pending(); n != 0 {
		t.Fatalf("refused conditional writes left %d pending ids", n)
	}
	never := newID()
	if err := f.s.Delete(ctx, never, ""); err != nil {
		t.Fatalf("unconditional Delete of a missing build while down = %v, want success", err)
	}
	if n := f.s.Pending(); n != 1 {
		t.Fatalf("Pending after the tombstone = %d, want 1", n)
	}
	if _, err := f.s.Get(ctx, never); !redstate.IsCode(err, redstate.ENOTFOUND) {
		t.Fatalf("Get of a tombstoned id = %v, want not found", err)
	}
}

// TestFallbackAudit_ListingsOverlayPendingCopiesWhenRedisIsUp: with Redis back but the write not
// yet written back, GetMany and listing pages show the pending copy and hide a pending delete,
// and a build created during the outage is not listed yet.
func TestFallbackAudit_ListingsOverlayPendingCopiesWhenRedisIsUp(t *testing.T) {
	f := newFixture(t, testConfig(resilience.PolicyFallback, time.Hour)) // the loop never runs
	ctx := context.Background()
	old := time.Now().Add(-time.Hour)
	changed, gone := newID(), newID()
	for _, id := range []string{changed, gone} {
		if _, err := f.raw.Save(ctx, doc(id, &old), buildstatus.SaveOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	f.flaky.down.Store(true)
	now := time.Now()
	want, err := f.s.Save(ctx, doc(changed, &now), buildstatus.SaveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.s.Delete(ctx, gone, ""); err != nil {
		t.Fatal(err)
	}
	created := newID()
	if _, err := f.s.Save(ctx, doc(created, &now), buildstatus.SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	f.flaky.down.Store(false)

	m, err := f.s.GetMany(ctx, []string{changed, gone, created})
	if err != nil {
		t.Fatal(err)
	}
	if m[changed] == nil || m[changed].ETag() != want.ETag() {
		t.Fatalf("GetMany[changed] = %v, want the pending copy", m[changed])
	}
	if m[gone] != nil {
		t.Fatalf("GetMany shows a build deleted in fallback mode")
	}
	for name, list := range map[string]func() (*buildstatus.Page, error){
		"List":        func() (*buildstatus.Page, error) { return f.s.List(ctx, "", 100) },
		"ListProject": func() (*buildstatus.Page, error) { return f.s.ListProject(ctx, "proj-resilient", "", 100) },
	} {
		p, err := list()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		seen := map[string]*buildstatus.Build{}
		for _, b := range p.Builds {
			seen[b.MustDoc().BuildID] = b
		}
		if b := seen[changed]; b == nil || b.ETag() != want.ETag() {
			t.Errorf("%s: pending build shown as %v, want the pending copy", name, b)
		}
		if seen[gone] != nil {
			t.Errorf("%s: shows a build deleted in fallback mode", name)
		}
		if seen[created] != nil {
			t.Errorf("%s: shows a build created during the outage before write-back", name)
		}
	}
}

// TestFallbackAudit_PermanentRejectionIsDropped: a pending write that Redis rejects for good
// (conflict: Redis holds the build under another project) is counted failed and dropped, not
// retried forever.
func TestFallbackAudit_PermanentRejectionIsDropped(t *testing.T) {
	f := newFixture(t, testConfig(resilience.PolicyFallback, time.Hour))
	ctx := context.Background()
	id := newID()
	f.flaky.down.Store(true)
	now := time.Now()
	if _, err := f.s.Save(ctx, doc(id, &now), buildstatus.SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	f.flaky.down.Store(false)
	// Another process creates the build under another project, with an older updatedAt.
	other := doc(id, nil)
	other.ProjectID = "another-project"
	if _, err := f.raw.Save(ctx, other, buildstatus.SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	f.s.writeBackRound()
	if n := f.s.Pending(); n != 0 {
		t.Fatalf("Pending after a permanent rejection = %d, want 0 (dropped)", n)
	}
	if v := counter(t, f.m, "redstate_fallback_writeback_total", "result", metrics.WriteBackFailed); v != 1 {
		t.Fatalf("writeback failed = %v, want 1", v)
	}
	got, err := f.raw.Get(ctx, id)
	if err != nil || got.MustDoc().ProjectID != "another-project" {
		t.Fatalf("Redis value after rejected write-back = %v, %v; want untouched", got, err)
	}
}

// TestFallbackAudit_CloseMakesOneLastWriteBack: graceful shutdown writes pending writes back when
// Redis is reachable, even if the write-back loop never ran.
func TestFallbackAudit_CloseMakesOneLastWriteBack(t *testing.T) {
	f := newFixture(t, testConfig(resilience.PolicyFallback, time.Hour))
	ctx := context.Background()
	id := newID()
	f.flaky.down.Store(true)
	now := time.Now()
	want, err := f.s.Save(ctx, doc(id, &now), buildstatus.SaveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f.flaky.down.Store(false)
	time.Sleep(40 * time.Millisecond) // past WaitDurationInOpenState should the breaker have opened
	if err := f.s.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := f.raw.Get(ctx, id)
	if err != nil || got.ETag() != want.ETag() {
		t.Fatalf("Redis after Close = %v, %v; want the fallback write", got, err)
	}
}

// TestJournalAudit_DirectoryCreatedIfMissing: "Its directory is created if missing."
func TestJournalAudit_DirectoryCreatedIfMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "fallback.journal")
	f := &flaky{Store: newFixture(t, testConfig(resilience.PolicyFallback, time.Hour)).raw}
	s := openStore(t, f, journalConfig(path, time.Hour), nil)
	f.down.Store(true)
	now := time.Now()
	if _, err := s.Save(context.Background(), doc(newID(), &now), buildstatus.SaveOptions{}); err != nil {
		t.Fatalf("fallback Save with a journal in a missing directory = %v", err)
	}
}
