package queue

import (
	"context"
	"sync"
)

// runningJobs are a Worker's running handlers, each with the cancel of its ctx and, for a job
// with a record, its job id. The heartbeat loop asks the broker which of those ids CancelJob
// asked to stop (cancel); the lease watch stops them all when the worker's lease lapses
// (lapse). One registry serves both, so every handler has exactly one cancellable ctx.
type runningJobs struct {
	mu     sync.Mutex
	next   uint64
	jobs   map[uint64]runningJob
	lapsed bool
}

// runningJob is one running handler.
type runningJob struct {
	id     string // "" for a job without a record
	cancel context.CancelCauseFunc
}

func newRunningJobs() *runningJobs { return &runningJobs{jobs: map[uint64]runningJob{}} }

// start registers a handler about to run (id "" for a job without a record) and returns its
// ctx, cancelled at once if the lease has lapsed, and the func that ends the registration and
// releases the ctx.
func (r *runningJobs) start(ctx context.Context, id string) (context.Context, func()) {
	hctx, cancel := context.WithCancelCause(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lapsed {
		cancel(errLeaseLapsed)
	}
	n := r.next
	r.next++
	r.jobs[n] = runningJob{id: id, cancel: cancel}
	return hctx, func() {
		r.mu.Lock()
		delete(r.jobs, n)
		r.mu.Unlock()
		cancel(nil)
	}
}

// ids returns the ids of the running jobs with a record.
func (r *runningJobs) ids() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.jobs))
	for _, j := range r.jobs {
		if j.id != "" {
			out = append(out, j.id)
		}
	}
	return out
}

// cancel cancels the handler ctx of job id, if it still runs, with errJobCancelled.
func (r *runningJobs) cancel(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, j := range r.jobs {
		if j.id == id {
			j.cancel(errJobCancelled)
		}
	}
}

// lapse cancels every running handler with errLeaseLapsed, and every handler started until
// renewed.
func (r *runningJobs) lapse() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lapsed = true
	for _, j := range r.jobs {
		j.cancel(errLeaseLapsed)
	}
}

// renewed ends a lapse: the lease was renewed.
func (r *runningJobs) renewed() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lapsed = false
}
