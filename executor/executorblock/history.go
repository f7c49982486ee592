package executorblock

import (
	"context"
	"sync"
	"time"

	"github.com/redstate/redstate/executor"
	"github.com/redstate/redstate/history"
)

// historyObserver passes the runner's measurements to the metrics and records in the
// statistics history: executor.stage_duration per stage handler, and executor.tasks from the
// executor's keyspace inspections (every executor.metrics-interval), set again at every
// history flush so the chart holds the last inspected figures between inspections.
type historyObserver struct {
	executor.Observer
	rec *history.Recorder

	mu      sync.Mutex
	running int64 // tenant locks held by a task
	stored  int64 // task projections stored
	seen    bool
}

// observerWithHistory is m, plus the history when rec is not nil.
func observerWithHistory(m *executor.Metrics, rec *history.Recorder) executor.Observer {
	if rec == nil {
		return m
	}
	h := &historyObserver{Observer: m, rec: rec}
	rec.AddSampler(h.sample)
	return h
}

// StageFinished implements executor.Observer.
func (h *historyObserver) StageFinished(handler string, ok bool, d time.Duration) {
	h.Observer.StageFinished(handler, ok, d)
	h.rec.Observe(history.ExecutorStageSeconds, d.Seconds(), handler)
}

// State implements executor.Observer: it keeps the inspection's task figures.
func (h *historyObserver) State(st executor.StateStats, leaked int) {
	h.Observer.State(st, leaked)
	var running int64
	for _, owner := range st.Locks {
		if owner != executor.OrphanScanOwner && executor.ValidateID("taskId", owner) == nil {
			running++
		}
	}
	h.mu.Lock()
	h.running, h.stored, h.seen = running, st.Keys["task"], true
	h.mu.Unlock()
}

// sample sets executor.tasks from the last inspection: state RUNNING (tasks holding their
// tenant lock) and ALL (task projections stored). Every instance inspects the same shared
// keyspace, so the last write of a bucket is true.
func (h *historyObserver) sample(_ context.Context, rec *history.Recorder) {
	h.mu.Lock()
	running, stored, seen := h.running, h.stored, h.seen
	h.mu.Unlock()
	if !seen {
		return
	}
	rec.Set(history.ExecutorTasks, float64(running), string(executor.TaskRunning))
	rec.Set(history.ExecutorTasks, float64(stored), "ALL")
}
