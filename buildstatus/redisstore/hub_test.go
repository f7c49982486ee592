package redisstore_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/buildstatus/storetest"
	"github.com/redstate/redstate/redistest"
)

// pubsubConnections counts the server's clients with at least one subscription.
func pubsubConnections(t *testing.T, client redis.UniversalClient) (subscribed, total int) {
	t.Helper()
	list, err := client.ClientList(t.Context()).Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(strings.TrimSpace(list), "\n") {
		total++
		for field := range strings.FieldsSeq(line) {
			if (strings.HasPrefix(field, "sub=") && field != "sub=0") || (strings.HasPrefix(field, "psub=") && field != "psub=0") {
				subscribed++
				break
			}
		}
	}
	return subscribed, total
}

// TestWatch_ManyStreamsShareOneConnection opens 2,000 watches (10 per build on 200 builds) on a
// server limited to 50 clients: with one connection per watch it refused connections; now the
// watches share one Pub/Sub connection, saves keep working, and every watcher gets its build's
// change.
func TestWatch_ManyStreamsShareOneConnection(t *testing.T) {
	srv := redistest.StartStandalone(t, redistest.WithConfig("maxclients", "50"))
	client := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 10})
	t.Cleanup(func() { _ = client.Close() })
	s := mustNew(t, client, time.Hour)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()

	const builds, perBuild = 200, 10
	ids := make([]string, builds)
	streams := make([]<-chan buildstatus.Event, 0, builds*perBuild)
	for i := range ids {
		ids[i] = storetest.NewBuildID()
		for range perBuild {
			ch, err := s.Watch(ctx, ids[i])
			if err != nil {
				t.Fatalf("Watch #%d: %v", len(streams), err)
			}
			streams = append(streams, ch)
		}
	}
	if sub, total := pubsubConnections(t, client); sub != 1 || total > 12 {
		t.Fatalf("%d watches use %d subscribed connections (%d clients in all), want 1", len(streams), sub, total)
	}
	for _, id := range ids {
		if _, err := s.Save(ctx, storetest.SampleDoc(id, "p"), buildstatus.SaveOptions{}); err != nil {
			t.Fatalf("Save while %d watches are open: %v", len(streams), err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan string, len(streams))
	for i, ch := range streams {
		wg.Go(func() {
			select {
			case ev := <-ch:
				if ev.Type != buildstatus.EventSaved || ev.BuildID != ids[i/perBuild] {
					errs <- "watch got " + ev.Type + " for " + ev.BuildID
				}
			case <-time.After(30 * time.Second): // a hang guard
				errs <- "a watch got no event"
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	// Ending the watches unsubscribes their channels.
	cancel()
	deadline := time.Now().Add(30 * time.Second)
	for {
		chans, err := client.PubSubChannels(t.Context(), "*").Result()
		if err == nil && len(chans) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("channels still subscribed after every watch ended: %d", len(chans))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWatch_GapAfterReconnect: killing the shared connection gives every watcher an EventGap,
// and changes after the reconnect are delivered again.
func TestWatch_GapAfterReconnect(t *testing.T) {
	client := redistest.StartStandalone(t).Client(t) // its own server: the test kills connections
	s := mustNew(t, client, time.Hour)
	id := storetest.NewBuildID()
	ch, err := s.Watch(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if err := client.ClientKillByFilter(t.Context(), "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	got := func() buildstatus.Event {
		select {
		case ev := <-ch:
			return ev
		case <-time.After(30 * time.Second):
			t.Fatal("no event")
		}
		return buildstatus.Event{}
	}
	if ev := got(); ev.Type != buildstatus.EventGap {
		t.Fatalf("after the connection was killed: %s, want a gap", ev.Type)
	}
	// After the resubscription, saves reach the watcher again.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := s.Save(t.Context(), storetest.SampleDoc(id, "p"), buildstatus.SaveOptions{}); err != nil {
			t.Fatal(err)
		}
		select {
		case ev := <-ch:
			if ev.Type == buildstatus.EventSaved {
				return
			}
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("no saved event after the reconnect")
		}
	}
}
