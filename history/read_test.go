package history_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/history"
	"github.com/redstate/redstate/history/historytest"
)

// One read is bounded: at most MaxSeriesPerRead series, at most MaxFieldReads bucket fields
// looked up (a latency series reads 22 a point); past either it is refused with too_large.
func TestReader_BoundsOneRead(t *testing.T) {
	t0 := time.Now().Truncate(time.Minute)
	clock := historytest.NewClock(t0)
	store := history.NewMemoryStore(clock.Now)
	rec, err := history.NewRecorder(history.Options{Store: store, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	for i := range history.MaxSeriesPerRead + 1 {
		rec.Add(history.QueueDone, 1, fmt.Sprintf("q%03d", i))
		if i < 16 {
			rec.Observe(history.QueueLatency, 0.1, fmt.Sprintf("q%03d", i))
		}
	}
	if err := rec.FlushAll(t.Context()); err != nil {
		t.Fatal(err)
	}
	reader := history.NewReader(store, clock.Now)
	read := func(q history.Query) error {
		_, err := reader.Read(t.Context(), q)
		return err
	}
	if err := read(history.Query{Metrics: []string{history.QueueDone}, Window: "15m"}); !redstate.IsCode(err, redstate.ETOOLARGE) {
		t.Errorf("%d series: %v, want too_large", history.MaxSeriesPerRead+1, err)
	}
	if err := read(history.Query{Metrics: []string{history.QueueDone}, Window: "15m", Labels: map[string]string{"queue": "q007"}}); err != nil {
		t.Errorf("one series: %v", err)
	}
	// 16 latency series at 24 h: (16 × 22 + 1) fields × 1440 points = 508,320 > 500,000.
	if err := read(history.Query{Metrics: []string{"queue.latency.p99"}, Window: "24h"}); !redstate.IsCode(err, redstate.ETOOLARGE) {
		t.Errorf("16 latency series over 24h: %v, want too_large", err)
	}
	if err := read(history.Query{Metrics: []string{"queue.latency.p50", "queue.latency.p99"}, Window: "1h"}); err != nil {
		t.Errorf("16 latency series over 1h (p50 and p99 share their fields): %v", err)
	}
}
