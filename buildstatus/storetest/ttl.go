package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
)

func (s suite) ttlTests() []namedTest {
	return []namedTest{
		{"TTLWithinBoundsAfterSave", s.testTTLBounds},
		{"ExpiredBuildDisappearsEverywhere", s.testExpiry},
		{"WritesRefreshTTL", s.testWritesRefreshTTL},
	}
}

func (s suite) testTTLBounds(t *testing.T) {
	st := s.store(t)
	id := NewBuildID()
	mustSave(t, st, SampleDoc(id, "p"))
	ttl, err := st.TTL(t.Context(), id)
	if err != nil {
		t.Fatalf("TTL: %v", err)
	}
	if ttl <= 0 || ttl > defaultTTL {
		t.Fatalf("TTL right after save = %v, want in (0, %v]", ttl, defaultTTL)
	}
	if ttl < defaultTTL-time.Minute {
		t.Fatalf("TTL right after save = %v, want close to %v", ttl, defaultTTL)
	}
}

// testExpiry saves builds with a one-second TTL and waits until every read path stops
// returning them.
func (s suite) testExpiry(t *testing.T) {
	st := s.newStore(t, time.Second)
	ctx := t.Context()
	const project = "expiring"
	gone, kept := NewBuildID(), NewBuildID()
	mustSave(t, st, SampleDoc(gone, project))
	eventually(t, "build with a 1s TTL still readable", func() bool {
		_, err := st.Get(ctx, gone)
		return redstate.IsCode(err, redstate.ENOTFOUND)
	})
	// A build saved after the first expired is still there: expiry is per build.
	mustSave(t, st, SampleDoc(kept, project))

	if ok, err := st.Exists(ctx, gone); err != nil || ok {
		t.Errorf("Exists(expired) = %v, %v", ok, err)
	}
	_, err := st.TTL(ctx, gone)
	wantCode(t, err, redstate.ENOTFOUND)
	many, err := st.GetMany(ctx, []string{gone, kept})
	if err != nil {
		t.Fatalf("GetMany: %v", err)
	}
	if _, ok := many[gone]; ok {
		t.Errorf("GetMany after expiry returned the expired build %s", gone)
	}
	if all := listAll(t, st, 10); slices.Contains(all, gone) {
		t.Errorf("List returned the expired build %s: %v", gone, all)
	}
	if got := listProjectAll(t, st, project, 10); slices.Contains(got, gone) {
		t.Errorf("ListProject returned the expired build %s: %v", gone, got)
	}
	wantCode(t, st.Delete(ctx, gone, ""), redstate.ENOTFOUND)
	_, err = st.UpdatePlatform(ctx, gone, &buildstatus.PlatformResult{Platform: "ios", Status: "SUCCESS"}, "")
	wantCode(t, err, redstate.ENOTFOUND)

	// The expired id can be created again, also with IfNoneMatch.
	if _, err := st.Save(ctx, SampleDoc(gone, "another-project"), buildstatus.SaveOptions{IfNoneMatch: true}); err != nil {
		t.Fatalf("re-creating an expired build: %v", err)
	}
	// The re-created build belongs to another project now: the old project's index must not
	// list it again.
	if got := listProjectAll(t, st, project, 10); slices.Contains(got, gone) {
		t.Errorf("ListProject(%s) lists %s, which now belongs to another project: %v", project, gone, got)
	}
	eventually(t, "all builds with a 1s TTL expire", func() bool {
		page, err := st.List(ctx, "", 10)
		return err == nil && len(page.Builds) == 0 && page.Cursor == ""
	})
	if got := listProjectAll(t, st, project, 10); len(got) != 0 {
		t.Errorf("ListProject after all expired = %v", got)
	}
}

// testWritesRefreshTTL checks that Save and UpdatePlatform restart the TTL, so a build written
// regularly outlives its original deadline.
func (s suite) testWritesRefreshTTL(t *testing.T) {
	const ttl = 2 * time.Second
	st := s.newStore(t, ttl)
	ctx := t.Context()
	id := NewBuildID()
	start := time.Now()
	mustSave(t, st, SampleDoc(id, "p"))
	waitTTLBelow := func(limit time.Duration) {
		t.Helper()
		eventually(t, "TTL never dropped to "+limit.String(), func() bool {
			left, err := st.TTL(ctx, id)
			if err != nil {
				t.Fatalf("TTL: %v", err)
			}
			return left <= limit
		})
	}
	wantTTLAbove := func(limit time.Duration, after string) {
		t.Helper()
		left, err := st.TTL(ctx, id)
		if err != nil {
			t.Fatalf("TTL after %s: %v", after, err)
		}
		if left <= limit || left > ttl {
			t.Fatalf("TTL after %s = %v, want in (%v, %v]", after, left, limit, ttl)
		}
	}
	waitTTLBelow(time.Second)
	if _, err := st.UpdatePlatform(ctx, id, &buildstatus.PlatformResult{Platform: "ios", Status: "SUCCESS", Progress: ptr(100)}, ""); err != nil {
		t.Fatalf("UpdatePlatform: %v", err)
	}
	wantTTLAbove(time.Second, "UpdatePlatform")
	waitTTLBelow(time.Second)
	mustSave(t, st, SampleDoc(id, "p"))
	wantTTLAbove(time.Second, "Save")
	// Past the first save's deadline the build is still there.
	if d := ttl + 200*time.Millisecond - time.Since(start); d > 0 {
		time.Sleep(d)
	}
	if ok, err := st.Exists(ctx, id); err != nil || !ok {
		t.Fatalf("build written %v ago with TTL %v: Exists = %v, %v", time.Since(start), ttl, ok, err)
	}
}

func mapKeys(m map[string]*buildstatus.Build) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
