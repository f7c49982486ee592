package history

import (
	"testing"
	"time"
)

// A tick writes the 1 s tier at once and a coarser tier's bucket only once it has ended, with
// its sum and its gauges' last values; a gauge set in the next bucket before the tick does not
// overwrite the ended bucket's.
func TestRecorder_CoarseTiersAreWrittenWhenTheirBucketEnds(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0).Truncate(time.Hour)
	now := t0
	clock := func() time.Time { return now }
	store := NewMemoryStore(clock)
	r, err := NewRecorder(Options{Store: store, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	field := QueueDone + fieldSep + "q"
	gauge := QueueSize + fieldSep + "q" + fieldSep + "pending"
	at := func(tier int, start int64, f string) (float64, bool) {
		got, err := store.Read(t.Context(), Tiers[tier], start, start, []string{f}, false)
		if err != nil {
			t.Fatal(err)
		}
		v, ok := got[0][f]
		return v, ok
	}
	tick := func(d time.Duration) {
		now = now.Add(d)
		if err := r.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	r.Add(QueueDone, 2, "q")
	r.Set(QueueSize, 7, "q", "pending")
	tick(0)
	if v, ok := at(0, t0.Unix(), field); !ok || v != 2 {
		t.Fatalf("1 s bucket = %v %v, want 2 at once", v, ok)
	}
	if _, ok := at(1, t0.Unix(), field); ok {
		t.Fatal("10 s bucket written before it ended")
	}
	tick(5 * time.Second)
	r.Add(QueueDone, 3, "q")
	r.Set(QueueSize, 8, "q", "pending")
	tick(5 * time.Second) // t0+10: the first 10 s bucket has ended; the gauge's 9 is set in the next one
	r.Set(QueueSize, 9, "q", "pending")
	tick(0)
	if v, ok := at(1, t0.Unix(), field); !ok || v != 5 {
		t.Errorf("10 s bucket = %v %v, want 5", v, ok)
	}
	if v, ok := at(1, t0.Unix(), gauge); !ok || v != 8 {
		t.Errorf("10 s gauge = %v %v, want 8 (its bucket's last)", v, ok)
	}
	if _, ok := at(2, t0.Unix(), field); ok {
		t.Fatal("1 min bucket written before it ended")
	}
	tick(50 * time.Second)
	if v, ok := at(2, t0.Unix(), field); !ok || v != 5 {
		t.Errorf("1 min bucket = %v %v, want 5", v, ok)
	}
	if v, ok := at(2, t0.Unix(), gauge); !ok || v != 9 {
		t.Errorf("1 min gauge = %v %v, want 9", v, ok)
	}
	if up, ok := at(2, t0.Unix(), upField); !ok || up != 1 {
		t.Errorf("1 min bucket up = %v %v", up, ok)
	}
}
