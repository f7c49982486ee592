package queue

import (
	"context"
	"sync"
)

// activeJobs are a Worker's running jobs with a record: job id → the cancel of its handler's
// ctx. The heartbeat loop asks the broker which of them CancelJob asked to stop.
type activeJobs struct {
	mu   sync.Mutex
	jobs map[string]context.CancelCauseFunc
}

func newActiveJobs() *activeJobs {
	return &activeJobs{jobs: map[string]context.CancelCauseFunc{}}
}

func (a *activeJobs) add(id string, cancel context.CancelCauseFunc) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.jobs[id] = cancel
}

func (a *activeJobs) remove(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.jobs, id)
}

// ids returns the running jobs' ids.
func (a *activeJobs) ids() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]string, 0, len(a.jobs))
	for id := range a.jobs {
		out = append(out, id)
	}
	return out
}

// cancel cancels the handler ctx of job id, if it still runs, with errJobCancelled.
func (a *activeJobs) cancel(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if c, ok := a.jobs[id]; ok {
		c(errJobCancelled)
	}
}
