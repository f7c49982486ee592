package history_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/history"
	"github.com/redstate/redstate/history/historytest"
)

// stuckStore is a store whose writes hang until their context ends: a Redis that stopped
// answering.
type stuckStore struct {
	history.Store
	writing chan struct{}
}

func (s stuckStore) Write(ctx context.Context, _ history.Batch) error {
	select {
	case s.writing <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return redstate.Wrap(redstate.EUNAVAILABLE, ctx.Err(), "stuck")
}

// Recording never waits for the store: while a flush hangs on it, Add, Set and Observe from
// many goroutines all return, and the hung flush's events are counted as dropped.
func TestRecorder_RecordingNeverWaitsForTheStore(t *testing.T) {
	store := stuckStore{Store: history.NewMemoryStore(nil), writing: make(chan struct{}, 1)}
	rec, err := history.NewRecorder(history.Options{Store: store, FlushTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	rec.Add(history.QueueDone, 2, "q")
	ctx, cancel := context.WithCancel(t.Context())
	flushed := make(chan error, 1)
	go func() { flushed <- rec.FlushAll(ctx) }()
	<-store.writing // the flush is stuck in the store now
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				rec.Add(history.QueueDone, 1, "q")
				rec.Set(history.QueueSize, float64(i), "q", "pending")
				rec.Observe(history.QueueLatency, float64(g)/10, "q")
			}
		})
	}
	wg.Wait() // would hang (test timeout) if recording waited for the stuck write
	cancel()
	if err := <-flushed; !redstate.IsCode(err, redstate.EUNAVAILABLE) {
		t.Fatalf("stuck flush = %v, want EUNAVAILABLE", err)
	}
	st := rec.Stats()
	if st.Dropped != 2 || st.Events != 2+8*500*3 || st.FailedFlushes != 3 {
		t.Errorf("stats = %+v, want the stuck flush's 2 events dropped, its 3 writes (one per tier) failed", st)
	}
}

// Concurrent recording and flushing lose nothing: every event counted lands in the store once,
// in every tier, while the clock moves on and the coarser tiers' buckets end and are written.
func TestRecorder_ConcurrentRecordingAndFlushingCountEveryEventOnce(t *testing.T) {
	t0 := time.Now().Truncate(time.Minute)
	clock := historytest.NewClock(t0)
	store := history.NewMemoryStore(clock.Now)
	rec, err := history.NewRecorder(history.Options{Store: store, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	flusher := make(chan struct{})
	go func() {
		defer close(flusher)
		for {
			select {
			case <-stop:
				return
			default:
				clock.Add(time.Second)
				_ = rec.Flush(t.Context())
			}
		}
	}()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 2000 {
				rec.Add(history.QueueDone, 1, "q")
			}
		})
	}
	wg.Wait()
	close(stop)
	<-flusher
	if err := rec.FlushAll(t.Context()); err != nil {
		t.Fatal(err)
	}
	end := clock.Now().Unix()
	if end-t0.Unix() > 14*60 {
		t.Skipf("the flusher moved the clock %d s: past the 1 s tier's window", end-t0.Unix())
	}
	for _, tier := range history.Tiers {
		got, err := store.Read(t.Context(), tier, tier.Start(t0.Unix()), tier.Start(end), []string{"queue.done\x1fq"}, false)
		if err != nil {
			t.Fatal(err)
		}
		var n float64
		for _, b := range got {
			n += b["queue.done\x1fq"]
		}
		if n != 8000 {
			t.Errorf("tier %s counted %v, want 8000", tier.Window, n)
		}
	}
}

// The memory store forgets a bucket when its tier's retention has passed on its clock.
func TestMemoryStore_ExpiresWithItsClock(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	clock := historytest.NewClock(t0)
	store := history.NewMemoryStore(clock.Now)
	field := "queue.done\x1fq"
	if err := store.Write(t.Context(), history.Batch{Counts: []history.Count{{Second: t0.Unix(), Field: field, N: 1}},
		Seen: map[string]int64{field: t0.Unix()}}); err != nil {
		t.Fatal(err)
	}
	kept := func() []bool {
		var out []bool
		for _, tier := range history.Tiers {
			got, err := store.Read(t.Context(), tier, tier.Start(t0.Unix()), tier.Start(t0.Unix()), []string{field}, false)
			if err != nil {
				t.Fatal(err)
			}
			_, ok := got[0][field]
			out = append(out, ok)
		}
		return out
	}
	clock.Set(t0.Add(16*time.Minute - time.Second))
	if k := kept(); !k[0] || !k[1] || !k[2] {
		t.Fatalf("just before 16 min: kept %v, want all", k)
	}
	clock.Set(t0.Add(16 * time.Minute))
	if k := kept(); k[0] || !k[1] || !k[2] {
		t.Fatalf("at 16 min: kept %v, want the 1 s bucket gone", k)
	}
	clock.Set(t0.Add(61 * time.Minute))
	if k := kept(); k[0] || k[1] || !k[2] {
		t.Fatalf("at 61 min: kept %v, want only the 1 min bucket", k)
	}
	clock.Set(t0.Add(24*time.Hour + time.Minute))
	if k := kept(); k[0] || k[1] || k[2] {
		t.Fatalf("after a day: kept %v, want none", k)
	}
	if s, _ := store.Series(t.Context()); len(s) != 0 {
		t.Errorf("registry after a day = %v, want empty", s)
	}
}

// Bad input is not recorded, and is counted: an unknown metric, the wrong kind, a wrong
// number of labels, an empty or control-character label.
func TestRecorder_InvalidEventsAreCountedNotRecorded(t *testing.T) {
	store := history.NewMemoryStore(nil)
	rec, err := history.NewRecorder(history.Options{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	rec.Add("queue.nope", 1, "q")
	rec.Set(history.QueueDone, 1, "q")
	rec.Add(history.QueueDone, 1)
	rec.Add(history.QueueDone, 1, "")
	rec.Add(history.QueueDone, 1, "a\x1fb")
	if st := rec.Stats(); st.Invalid != 5 || st.Series != 0 {
		t.Errorf("stats = %+v, want 5 invalid and no series", st)
	}
	var nilRec *history.Recorder
	nilRec.Add(history.QueueDone, 1, "q") // a nil recorder records nothing
	if _, err := history.NewRecorder(history.Options{}); !redstate.IsCode(err, redstate.EINVALID) {
		t.Errorf("no store: %v, want EINVALID", err)
	}
}
