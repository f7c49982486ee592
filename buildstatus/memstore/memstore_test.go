package memstore

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/buildstatus/storetest"
)

func TestStoreConformance(t *testing.T) {
	storetest.RunStoreSuite(t, func(t *testing.T, ttl time.Duration) buildstatus.Store {
		s := New(Options{TTL: ttl, SweepInterval: 100 * time.Millisecond})
		t.Cleanup(func() { _ = s.Close() })
		return s
	}, storetest.Features{})
}

// fakeClock is a settable clock for Options.Now.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newFakeStore(t *testing.T, ttl time.Duration) (*Store, *fakeClock) {
	t.Helper()
	clock := &fakeClock{now: time.Date(2025, 11, 9, 10, 30, 0, 0, time.UTC)}
	// A long sweep interval: the tests call sweep themselves.
	s := New(Options{TTL: ttl, Now: clock.Now, SweepInterval: time.Hour})
	t.Cleanup(func() { _ = s.Close() })
	return s, clock
}

func (s *Store) sizes() (builds, order, heap, projects int) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	live := 0
	for _, e := range s.order.entries {
		if !e.removed {
			live++
		}
	}
	return len(s.builds), live, len(s.expiry), len(s.projects)
}

func TestSweeper_FreesExpiredBuilds(t *testing.T) {
	s, clock := newFakeStore(t, time.Minute)
	ctx := t.Context()
	for i := range 200 {
		doc := storetest.SampleDoc(storetest.NewBuildID(), "p"+string(rune('a'+i%3)))
		if _, err := s.Save(ctx, doc, buildstatus.SaveOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(30 * time.Second)
	keep := storetest.NewBuildID()
	if _, err := s.Save(ctx, storetest.SampleDoc(keep, "pa"), buildstatus.SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := s.sweep(); n != 0 {
		t.Fatalf("sweep before expiry removed %d", n)
	}
	clock.Advance(31 * time.Second)
	// Invisible at once, before any sweep.
	page, err := s.List(ctx, "", 1000)
	if err != nil || len(page.Builds) != 1 || page.Builds[0].MustDoc().BuildID != keep {
		t.Fatalf("List after expiry = %v, %v; want only %s", page, err, keep)
	}
	if n := s.sweep(); n != 200 {
		t.Fatalf("sweep removed %d, want 200", n)
	}
	if b, o, h, p := s.sizes(); b != 1 || o != 1 || h != 1 || p != 1 {
		t.Fatalf("after sweep: %d builds, %d in order, %d in heap, %d projects; want 1 each", b, o, h, p)
	}
	if len(s.order.entries) > 1 {
		t.Fatalf("order keeps %d tombstones after mass expiry", len(s.order.entries)-1)
	}
	clock.Advance(time.Minute)
	s.sweep()
	if b, o, h, p := s.sizes(); b+o+h+p != 0 {
		t.Fatalf("after full expiry: %d builds, %d in order, %d in heap, %d projects", b, o, h, p)
	}
}

func TestSweeper_RunsInBackground(t *testing.T) {
	s := New(Options{TTL: 50 * time.Millisecond, SweepInterval: 10 * time.Millisecond})
	defer s.Close()
	if _, err := s.Save(t.Context(), storetest.SampleDoc(storetest.NewBuildID(), "p"), buildstatus.SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if b, _, _, _ := s.sizes(); b == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("background sweeper did not remove the expired build")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRefreshedTTL_NotSwept(t *testing.T) {
	s, clock := newFakeStore(t, time.Minute)
	ctx := t.Context()
	id := storetest.NewBuildID()
	if _, err := s.Save(ctx, storetest.SampleDoc(id, "p"), buildstatus.SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(50 * time.Second)
	if _, err := s.UpdatePlatform(ctx, id, &buildstatus.PlatformResult{Platform: "ios", Status: "SUCCESS"}, ""); err != nil {
		t.Fatal(err)
	}
	clock.Advance(50 * time.Second)
	if n := s.sweep(); n != 0 {
		t.Fatalf("sweep removed a refreshed build")
	}
	if ttl, err := s.TTL(ctx, id); err != nil || ttl != 10*time.Second {
		t.Fatalf("TTL = %v, %v; want 10s", ttl, err)
	}
}

func TestClose_StopsSweeperAndWatches(t *testing.T) {
	before := runtime.NumGoroutine()
	s := New(Options{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ch, err := s.Watch(ctx, storetest.NewBuildID())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	select {
	case _, ok := <-ch:
		if ok {
			t.Fatal("event after Close")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("watch channel still open after Close")
	}
	select {
	case <-s.swept:
	default:
		t.Fatal("sweeper still running after Close")
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after Close, %d before New", runtime.NumGoroutine(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The store stays readable after Close.
	if _, err := s.Get(t.Context(), storetest.NewBuildID()); !redstate.IsCode(err, redstate.ENOTFOUND) {
		t.Fatalf("Get after Close = %v, want ENOTFOUND", err)
	}
}

func TestWatch_GapAfterOverflow(t *testing.T) {
	s, _ := newFakeStore(t, time.Minute)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	id := storetest.NewBuildID()
	ch, err := s.Watch(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	const writes = WatchBuffer * 3
	for range writes {
		if _, err := s.Save(ctx, storetest.SampleDoc(id, "p"), buildstatus.SaveOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	saved, gaps := 0, 0
	for saved+gaps < writes {
		select {
		case ev := <-ch:
			switch ev.Type {
			case buildstatus.EventSaved:
				if gaps > 0 {
					t.Fatal("saved event after the gap, but nothing was written after the overflow")
				}
				saved++
			case buildstatus.EventGap:
				gaps++
			}
		case <-time.After(500 * time.Millisecond):
			if gaps != 1 || saved < WatchBuffer || saved > WatchBuffer+1 {
				t.Fatalf("got %d saved and %d gaps, want %d-%d saved then exactly one gap", saved, gaps, WatchBuffer, WatchBuffer+1)
			}
			return
		}
	}
	t.Fatalf("got %d saved and %d gaps for %d writes to a full buffer", saved, gaps, writes)
}

func TestReturnedBuildsDoNotAliasStoredBytes(t *testing.T) {
	s, _ := newFakeStore(t, time.Minute)
	id := storetest.NewBuildID()
	b, err := s.Save(t.Context(), storetest.SampleDoc(id, "p"), buildstatus.SaveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.mu.RLock()
	stored := s.builds[id].json
	s.mu.RUnlock()
	if &b.JSON[0] == &stored[0] {
		t.Fatal("Save returned the stored slice itself")
	}
}
