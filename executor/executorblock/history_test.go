package executorblock

import (
	"testing"
	"time"

	"github.com/redstate/redstate/executor"
	"github.com/redstate/redstate/history"
	"github.com/redstate/redstate/history/historytest"
)

// The runner's measurements reach the history: each stage's duration per handler, and the
// last inspection's tasks (RUNNING: locks held by a task; ALL: task projections), set again at
// every flush until the next inspection.
func TestObserverWithHistory_RecordsStagesAndTasks(t *testing.T) {
	t0 := time.Now().Truncate(time.Minute)
	clock := historytest.NewClock(t0)
	store := history.NewMemoryStore(clock.Now)
	rec, err := history.NewRecorder(history.Options{Store: store, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	obs := observerWithHistory(executor.NewMetrics(nil), rec)
	obs.StageFinished("deploy", true, 300*time.Millisecond)
	obs.State(executor.StateStats{Keys: map[string]int64{"task": 7}, Locks: map[string]string{"tenant-a": "task-1", "tenant-b": "orphan-scan"}}, 0)
	if err := rec.FlushAll(t.Context()); err != nil {
		t.Fatal(err)
	}
	clock.Add(time.Second) // no inspection meanwhile: the figures are set again
	if err := rec.FlushAll(t.Context()); err != nil {
		t.Fatal(err)
	}
	res, err := history.NewReader(store, func() time.Time { return t0.Add(time.Minute) }).Read(t.Context(),
		history.Query{Metrics: []string{"executor.stage_duration.p50", history.ExecutorTasks}, Window: "15m"})
	if err != nil {
		t.Fatal(err)
	}
	at := func(s history.Series, sec int64) float64 {
		for i, ts := range res.Times {
			if ts == sec && s.Values[i] != nil {
				return *s.Values[i]
			}
		}
		return -1
	}
	got := map[string][2]float64{}
	for _, s := range res.Series {
		got[s.Metric+" "+s.Labels["stage"]+s.Labels["state"]] = [2]float64{at(s, t0.Unix()), at(s, t0.Unix()+1)}
	}
	if p50 := got["executor.stage_duration.p50 deploy"][0]; p50 <= 0.25 || p50 > 0.5 {
		t.Errorf("stage p50 = %v, want in (0.25, 0.5]", p50)
	}
	if got["executor.tasks RUNNING"] != [2]float64{1, 1} || got["executor.tasks ALL"] != [2]float64{7, 7} {
		t.Errorf("tasks = %v, want RUNNING 1 and ALL 7 at both seconds", got)
	}
}
