package redisstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/buildstatus/redisstore"
	"github.com/redstate/redstate/buildstatus/storetest"
	"github.com/redstate/redstate/redistest"
)

// TestUpdatePlatform_SameProcessUpdatesTakeTurns: concurrent updates of one build in one
// process never conflict with each other: one script call each, no compare-and-set retry.
// (Before they took turns, 20 concurrent updates cost dozens of failed attempts, and under
// load 50 writers could exhaust the attempts.)
func TestUpdatePlatform_SameProcessUpdatesTakeTurns(t *testing.T) {
	srv := redistest.StartStandalone(t)
	client := srv.Client(t)
	s := mustNew(t, client, time.Hour)
	ctx := t.Context()
	id := storetest.NewBuildID()
	if _, err := s.Save(ctx, storetest.SampleDoc(id, "p"), buildstatus.SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	before := redistest.CommandCalls(t, client, "evalsha", "eval")
	const n = 20
	updatePlatformsConcurrently(t, s, id, n)
	if calls := redistest.CommandCalls(t, client, "evalsha", "eval") - before; calls != n {
		t.Fatalf("%d concurrent updates ran %d scripts, want %d (one each, no retry)", n, calls, n)
	}
}

// TestUpdatePlatform_WaitingForTurnHonoursTheContext: an update waiting behind another of the
// same build gives up when its context ends.
func TestUpdatePlatform_WaitingForTurnHonoursTheContext(t *testing.T) {
	srv := redistest.StartStandalone(t)
	client := srv.Client(t)
	s := mustNew(t, client, time.Hour)
	id := storetest.NewBuildID()
	if _, err := s.Save(t.Context(), storetest.SampleDoc(id, "p"), buildstatus.SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	srv.Pause(t) // the first update holds its turn while Redis does not answer
	defer srv.Resume(t)
	first := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := s.UpdatePlatform(ctx, id, &buildstatus.PlatformResult{Platform: "a", Status: "SUCCESS"}, "")
		first <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := s.UpdatePlatform(ctx, id, &buildstatus.PlatformResult{Platform: "b", Status: "SUCCESS"}, "")
	if !redstate.IsCode(err, redstate.EUNAVAILABLE) {
		t.Fatalf("the second update = %v, want EUNAVAILABLE", err)
	}
	if len(first) != 0 {
		t.Fatal("the second update returned only after the first ended: it did not give up waiting for its turn")
	}
	srv.Resume(t)
	<-first
}

// updatePlatformsConcurrently runs n concurrent UpdatePlatform calls on build id, platforms p0
// to p<n-1>, and fails t on any error.
func updatePlatformsConcurrently(t *testing.T, s *redisstore.Store, id string, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			_, err := s.UpdatePlatform(t.Context(), id, &buildstatus.PlatformResult{Platform: fmt.Sprintf("p%d", i), Status: "SUCCESS"}, "")
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}
