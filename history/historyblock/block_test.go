package historyblock_test

import (
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/component"
	"github.com/redstate/redstate/history"
	"github.com/redstate/redstate/history/historyblock"
	"github.com/redstate/redstate/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// open opens and starts a history block on env.
func open(t *testing.T, env component.Env) *historyblock.Block {
	t.Helper()
	b, err := historyblock.Open(t.Context(), env, history.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	return b
}

// Two server processes (two environments on one Redis, each with its own block and recorder)
// record; one read sums their counters and does not double their gauges; a process started
// later (a restart) reads what they wrote.
func TestBlock_TwoInstancesOnOneRedis(t *testing.T) {
	client := redistest.SharedStandalone(t).Client(t)
	envA := component.Env{Redis: client, Namespace: "prod-"}
	envB := component.Env{Redis: client, Namespace: "prod-"}
	a, b := open(t, envA), open(t, envB)
	start := time.Now()
	a.Recorder().Add(history.QueueDone, 3, "q")
	b.Recorder().Add(history.QueueDone, 4, "q")
	a.Recorder().Set(history.QueueSize, 5, "q", "pending")
	b.Recorder().Set(history.QueueSize, 5, "q", "pending")
	for _, blk := range []*historyblock.Block{a, b} {
		if err := blk.Close(t.Context()); err != nil { // the last flush
			t.Fatal(err)
		}
	}
	restarted := open(t, component.Env{Redis: client, Namespace: "prod-"})
	defer restarted.Close(t.Context())
	if h := restarted.Health(t.Context()); h.Backend != component.BackendRedis || h.State != component.StateOK {
		t.Errorf("health = %+v", h)
	}
	// Read as of a few seconds later, when the buckets written are complete.
	store := history.NewRedisStore(client, history.NewKeys(redstate.Prefix("prod-", "")), nil)
	res, err := history.NewReader(store, func() time.Time { return start.Add(3 * time.Second) }).Read(t.Context(),
		history.Query{Metrics: []string{history.QueueDone, history.QueueSize}, Window: "15m"})
	if err != nil {
		t.Fatal(err)
	}
	var done, size float64
	for i := range res.Times {
		if v := res.Series[0].Values[i]; v != nil {
			done += *v
		}
		if v := res.Series[1].Values[i]; v != nil {
			size = max(size, *v)
		}
	}
	if done != 7 || size != 5 {
		t.Errorf("queue.done summed = %v, want 7 (3 + 4); queue.size = %v, want 5, not 10", done, size)
	}
	other := history.NewRedisStore(client, history.NewKeys(redstate.Prefix("staging-", "")), nil)
	if s, err := other.Series(t.Context()); err != nil || len(s) != 0 {
		t.Errorf("another namespace sees %v %v", s, err)
	}
}

// Without Redis the history lives in memory; switched off, there is nothing to record into.
func TestBlock_MemoryAndOff(t *testing.T) {
	mem, err := historyblock.Open(t.Context(), component.Env{}, history.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if h := mem.Health(t.Context()); h.Backend != component.BackendMemory || h.State != component.StateOK || mem.Reader() == nil {
		t.Errorf("memory health = %+v", h)
	}
	off, err := historyblock.Open(t.Context(), component.Env{}, history.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if off.Recorder() != nil || off.Reader() != nil || off.Health(t.Context()).State != component.StateOff {
		t.Errorf("off: recorder %v reader %v", off.Recorder(), off.Reader())
	}
	if _, err := historyblock.Open(t.Context(), component.Env{}, history.Config{Enabled: true, MaxSeries: -1}); !redstate.IsCode(err, redstate.EINVALID) {
		t.Errorf("negative max-series: %v", err)
	}
}
