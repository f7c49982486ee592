package history

import (
	"testing"
	"time"
)

func TestMemoryRecorderReader_CountsAndGauges(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	store := NewMemoryStore(clock)
	r, err := NewRecorder(Options{Store: store, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	r.Add(QueueDone, 3, "q")
	r.Set(QueueSize, 7, "q", "pending")
	if err := r.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	now = now.Add(3 * time.Second)
	res, err := NewReader(store, clock).Read(t.Context(), Query{Metrics: []string{QueueDone, QueueSize}, Window: "15m"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Times) != 900 || len(res.Series) != 2 {
		t.Fatalf("times %d series %d", len(res.Times), len(res.Series))
	}
	t.Logf("%+v", res.Series[0].Labels)
}
