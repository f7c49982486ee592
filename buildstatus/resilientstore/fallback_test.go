package resilientstore

import (
	"context"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/internal/resilience"
	"github.com/redstate/redstate/metrics"
)

func TestFallback_AcceptsWritesServesThemAndWritesBack(t *testing.T) {
	f := newFixture(t, testConfig(resilience.PolicyFallback, 5*time.Millisecond))
	ctx := context.Background()
	stored := newID()
	if _, err := f.s.Save(ctx, doc(stored, nil), buildstatus.SaveOptions{}); err != nil {
		t.Fatal(err)
	}

	f.flaky.down.Store(true)
	id := newID()
	now := time.Now()
	if _, err := f.s.Save(ctx, doc(id, &now), buildstatus.SaveOptions{}); err != nil {
		t.Fatalf("fallback Save while down = %v, want success", err)
	}
	if got := f.s.Pending(); got != 1 {
		t.Fatalf("Pending = %d, want 1", got)
	}
	if b, err := f.s.Get(ctx, id); err != nil || b.MustDoc().BuildID != id {
		t.Fatalf("read-your-writes Get = %v, %v", b, err)
	}
	if ok, err := f.s.Exists(ctx, id); err != nil || !ok {
		t.Fatalf("Exists(pending) = %v, %v", ok, err)
	}
	b, err := f.s.UpdatePlatform(ctx, id, &buildstatus.PlatformResult{Platform: "h5", Status: "SUCCESS"}, "")
	if err != nil {
		t.Fatalf("UpdatePlatform of a pending build = %v", err)
	}
	// Never a false 404: builds that are not pending need Redis.
	if _, err := f.s.Get(ctx, stored); !redstate.IsCode(err, redstate.EUNAVAILABLE) {
		t.Fatalf("Get of non-pending build while down = %v, want EUNAVAILABLE", err)
	}
	if _, err := f.s.Get(ctx, newID()); !redstate.IsCode(err, redstate.EUNAVAILABLE) {
		t.Fatalf("Get of unknown build while down = %v, want EUNAVAILABLE (not not_found)", err)
	}
	if m, err := f.s.GetMany(ctx, []string{id}); err != nil || m[id] == nil {
		t.Fatalf("GetMany of pending ids = %v, %v", m, err)
	}
	if _, err := f.s.GetMany(ctx, []string{id, stored}); !redstate.IsCode(err, redstate.EUNAVAILABLE) {
		t.Fatalf("GetMany with a non-pending id while down = %v, want EUNAVAILABLE", err)
	}
	if _, err := f.s.List(ctx, "", 10); !redstate.IsCode(err, redstate.EUNAVAILABLE) {
		t.Fatalf("List while down = %v, want EUNAVAILABLE", err)
	}
	if _, err := f.s.ListProject(ctx, "proj-resilient", "", 10); !redstate.IsCode(err, redstate.EUNAVAILABLE) {
		t.Fatalf("ListProject while down = %v, want EUNAVAILABLE", err)
	}
	// Writes that need Redis's current value are refused.
	if _, err := f.s.UpdatePlatform(ctx, stored, &buildstatus.PlatformResult{Platform: "h5", Status: "SUCCESS"}, ""); !redstate.IsCode(err, redstate.EUNAVAILABLE) {
		t.Fatalf("UpdatePlatform of non-pending build while down = %v, want EUNAVAILABLE", err)
	}
	if _, err := f.s.Save(ctx, doc(newID(), nil), buildstatus.SaveOptions{IfNoneMatch: true}); !redstate.IsCode(err, redstate.EUNAVAILABLE) {
		t.Fatalf("conditional Save while down = %v, want EUNAVAILABLE", err)
	}
	if _, err := f.raw.Get(ctx, id); !redstate.IsCode(err, redstate.ENOTFOUND) {
		t.Fatalf("Redis already holds the fallback write: %v", err)
	}

	f.flaky.down.Store(false)
	eventually(t, "write-back", func() bool { return f.s.Pending() == 0 })
	got, err := f.raw.Get(ctx, id)
	if err != nil {
		t.Fatalf("Redis after write-back: %v", err)
	}
	if got.ETag() != b.ETag() {
		t.Fatalf("written-back value differs from the acknowledged one:\n got %s\nwant %s", got.JSON, b.JSON)
	}
	if v := counter(t, f.m, "redstate_fallback_writeback_total", "result", metrics.WriteBackWritten); v != 1 {
		t.Errorf("writeback written = %v, want 1", v)
	}
	if v := counter(t, f.m, "redstate_fallback_writes_pending", "block", buildstatus.Block); v != 0 {
		t.Errorf("pending gauge = %v, want 0", v)
	}
	// Reads go to Redis again.
	if _, err := f.s.Get(ctx, stored); err != nil {
		t.Fatal(err)
	}
}

func TestFallback_PendingReadsServedFromMemoryAfterRecovery(t *testing.T) {
	f := newFixture(t, testConfig(resilience.PolicyFallback, time.Hour)) // the loop never runs
	ctx := context.Background()
	id := newID()
	old := time.Now().Add(-time.Hour)
	if _, err := f.raw.Save(ctx, doc(id, &old), buildstatus.SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	f.flaky.down.Store(true)
	now := time.Now()
	want, err := f.s.Save(ctx, doc(id, &now), buildstatus.SaveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f.flaky.down.Store(false)
	got, err := f.s.Get(ctx, id)
	if err != nil || got.ETag() != want.ETag() {
		t.Fatalf("Get of a pending build after recovery = %v (%v), want the fallback copy", got, err)
	}
	f.s.writeBackRound()
	if n := f.s.Pending(); n != 0 {
		t.Fatalf("Pending after a round = %d", n)
	}
	if got, _ := f.raw.Get(ctx, id); got.ETag() != want.ETag() {
		t.Fatalf("Redis holds %s, want the newer fallback copy", got.JSON)
	}
}

func TestWriteBack_NewerWins(t *testing.T) {
	base := time.Now().Truncate(time.Second)
	at := func(d time.Duration) *time.Time { t := base.Add(d); return &t }
	cases := []struct {
		name          string
		primary       *time.Time // updatedAt written to Redis during the outage (nil: null)
		fallback      *time.Time // updatedAt of the fallback write (nil: null)
		wantFallback  bool
		wantCountedAs string
	}{
		{"primary newer kept", at(time.Minute), at(0), false, metrics.WriteBackSuperseded},
		{"fallback newer written", at(-time.Minute), at(0), true, metrics.WriteBackWritten},
		{"equal times: fallback written", at(0), at(0), true, metrics.WriteBackWritten},
		{"null primary loses", nil, at(0), true, metrics.WriteBackWritten},
		{"null fallback loses", at(0), nil, false, metrics.WriteBackSuperseded},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, testConfig(resilience.PolicyFallback, 5*time.Millisecond))
			ctx := context.Background()
			id := newID()
			f.flaky.down.Store(true)
			mine, err := f.s.Save(ctx, doc(id, tc.fallback), buildstatus.SaveOptions{})
			if err != nil {
				t.Fatal(err)
			}
			theirs := doc(id, tc.primary)
			theirs.Status = "OTHER_WRITER"
			other, err := f.raw.Save(ctx, theirs, buildstatus.SaveOptions{}) // another process
			if err != nil {
				t.Fatal(err)
			}
			f.flaky.down.Store(false)
			eventually(t, "write-back", func() bool { return f.s.Pending() == 0 })
			got, err := f.raw.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			want := other
			if tc.wantFallback {
				want = mine
			}
			if got.ETag() != want.ETag() {
				t.Fatalf("Redis holds %s\nwant %s", got.JSON, want.JSON)
			}
			if v := counter(t, f.m, "redstate_fallback_writeback_total", "result", tc.wantCountedAs); v != 1 {
				t.Errorf("%s = %v, want 1", tc.wantCountedAs, v)
			}
			if b, err := f.s.Get(ctx, id); err != nil || b.ETag() != want.ETag() {
				t.Fatalf("Get after write-back = %v, %v; want Redis's value", b, err)
			}
		})
	}
}

func TestWriteBack_Tombstone(t *testing.T) {
	for _, tc := range []struct {
		name        string
		updated     time.Duration // Redis's updatedAt relative to now
		wantDeleted bool
	}{
		{"delete wins over older value", -time.Hour, true},
		{"later update survives delete", time.Hour, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, testConfig(resilience.PolicyFallback, 5*time.Millisecond))
			ctx := context.Background()
			id := newID()
			u := time.Now().Add(tc.updated)
			if _, err := f.raw.Save(ctx, doc(id, &u), buildstatus.SaveOptions{}); err != nil {
				t.Fatal(err)
			}
			f.flaky.down.Store(true)
			if err := f.s.Delete(ctx, id, ""); err != nil {
				t.Fatalf("fallback Delete = %v, want success", err)
			}
			if _, err := f.s.Get(ctx, id); !redstate.IsCode(err, redstate.ENOTFOUND) {
				t.Fatalf("Get after fallback delete = %v, want ENOTFOUND", err)
			}
			if err := f.s.Delete(ctx, id, ""); !redstate.IsCode(err, redstate.ENOTFOUND) {
				t.Fatalf("second Delete = %v, want ENOTFOUND", err)
			}
			if _, err := f.raw.Get(ctx, id); err != nil {
				t.Fatalf("Redis lost the build before write-back: %v", err)
			}
			f.flaky.down.Store(false)
			eventually(t, "write-back", func() bool { return f.s.Pending() == 0 })
			_, err := f.raw.Get(ctx, id)
			if deleted := redstate.IsCode(err, redstate.ENOTFOUND); deleted != tc.wantDeleted {
				t.Fatalf("Redis Get after write-back = %v, want deleted=%v", err, tc.wantDeleted)
			}
		})
	}
}

// racing writes to Redis between the write-back's read and its conditional save.
type racing struct {
	*flaky
	once func()
}

func (r *racing) Save(ctx context.Context, doc *buildstatus.PublishResponse, opts buildstatus.SaveOptions) (*buildstatus.Build, error) {
	if opts.IfMatch != "" && r.once != nil {
		fn := r.once
		r.once = nil
		fn()
	}
	return r.flaky.Save(ctx, doc, opts)
}

func TestWriteBack_ConcurrentWriteNeverClobbered(t *testing.T) {
	f := newFixture(t, testConfig(resilience.PolicyFallback, time.Hour))
	ctx := context.Background()
	id := newID()
	old := time.Now().Add(-time.Hour)
	if _, err := f.raw.Save(ctx, doc(id, &old), buildstatus.SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	f.flaky.down.Store(true)
	now := time.Now()
	if _, err := f.s.Save(ctx, doc(id, &now), buildstatus.SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	f.flaky.down.Store(false)
	later := time.Now().Add(time.Hour)
	var concurrent *buildstatus.Build
	r := &racing{flaky: f.flaky, once: func() {
		var err error
		if concurrent, err = f.raw.Save(ctx, doc(id, &later), buildstatus.SaveOptions{}); err != nil {
			t.Error(err)
		}
	}}
	f.s.primary = r

	f.s.writeBackRound() // reads the old value, then loses the race: precondition, stays pending
	if n := f.s.Pending(); n != 1 {
		t.Fatalf("Pending after a precondition failure = %d, want 1", n)
	}
	f.s.writeBackRound() // compares again: Redis is newer now
	if n := f.s.Pending(); n != 0 {
		t.Fatalf("Pending = %d, want 0", n)
	}
	got, err := f.raw.Get(ctx, id)
	if err != nil || got.ETag() != concurrent.ETag() {
		t.Fatalf("Redis = %v (%v), want the concurrent newer write kept", got, err)
	}
	if v := counter(t, f.m, "redstate_fallback_writeback_total", "result", metrics.WriteBackSuperseded); v != 1 {
		t.Errorf("superseded = %v, want 1", v)
	}
}

func TestFallback_WatchSeesFallbackWrites(t *testing.T) {
	f := newFixture(t, testConfig(resilience.PolicyFallback, 5*time.Millisecond))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	id := newID()
	f.flaky.down.Store(true)
	ch, err := f.s.Watch(ctx, id)
	if err != nil {
		t.Fatalf("Watch while down = %v, want a memory-backed stream", err)
	}
	b, err := f.s.Save(ctx, doc(id, nil), buildstatus.SaveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-ch:
		if ev.Type != buildstatus.EventSaved || ev.ETag != b.ETag() {
			t.Fatalf("event = %+v, want saved %s", ev, b.ETag())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no event for a fallback write")
	}
	f.flaky.down.Store(false)
	// Redis comes back: a gap marks the resubscription.
	deadline := time.After(5 * time.Second)
	for {
		select {
		case ev := <-ch:
			if ev.Type == buildstatus.EventGap {
				cancel()
				for range ch { // closes when ctx ends
				}
				return
			}
		case <-deadline:
			t.Fatal("no gap event after Redis returned")
		}
	}
}
