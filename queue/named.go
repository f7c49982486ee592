package queue

// NamedStats is a queue's Stats with its name and whether it is paused: the answer of GET
// /v1/queues/{queue}/stats and of `redstate queue stats --json`.
type NamedStats struct {
	// Queue is the queue's name.
	Queue string `json:"queue"`
	Stats
	// Paused is true while the queue is paused (Admin.Pause): its workers take no jobs.
	Paused bool `json:"paused"`
	// Pool is the pool of queue.pools that serves the queue; nil (omitted) when it has a
	// worker of its own, or none.
	Pool *PoolMembership `json:"pool,omitempty"`
}

// PoolMembership is the pool of queue.pools that serves a queue, with the queue's weight there,
// as GET /v1/queues, GET /v1/queues/{queue}/stats and `redstate queue stats` show it.
type PoolMembership struct {
	// Pool is the pool's name.
	Pool string `json:"pool"`
	// Strict is the pool's mode: true strict (Weight is the queue's priority), false weighted.
	Strict bool `json:"strict"`
	// Concurrency is the pool's budget of handlers, shared by its queues.
	Concurrency int `json:"concurrency"`
	// Weight is the queue's share (weighted) or priority (strict).
	Weight int `json:"weight"`
	// Queues are the pool's queues, heaviest (highest priority) first.
	Queues []string `json:"queues"`
}

// DeadLetterPage is one page of a queue's dead letters, newest first: the answer of GET
// /v1/queues/{queue}/dead and of `redstate queue dead --json`.
type DeadLetterPage struct {
	// Queue is the queue's name.
	Queue string `json:"queue"`
	// Start is the offset of the page's first dead letter (0 = newest).
	Start int `json:"start"`
	// DeadLetters are the page's dead letters.
	DeadLetters []DeadLetter `json:"deadLetters"`
}

// JobPage is one page of a queue's jobs in one state, oldest transition first: the answer of
// GET /v1/queues/{queue}/jobs and of `redstate queue list --json`.
type JobPage struct {
	// Queue is the queue's name and State the state listed.
	Queue string   `json:"queue"`
	State JobState `json:"state"`
	// Jobs are the page's jobs (each as Job.Shown).
	Jobs []Job `json:"jobs"`
	// Next is the cursor of the next page; "" (omitted) after the last page.
	Next string `json:"next,omitempty"`
}

// NewJobPage returns the page of jobs listed by Admin.Jobs, each as Job.Shown.
func NewJobPage(queue string, state JobState, jobs []Job, next string) JobPage {
	p := JobPage{Queue: queue, State: state, Jobs: make([]Job, len(jobs)), Next: next}
	for i, j := range jobs {
		p.Jobs[i] = j.Shown()
	}
	return p
}

// PauseState is whether a queue is paused: the answer of POST /v1/queues/{queue}/pause and
// /resume and of `redstate queue pause|resume --json`.
type PauseState struct {
	// Queue is the queue's name.
	Queue string `json:"queue"`
	// Paused is true while its workers take no jobs.
	Paused bool `json:"paused"`
}

// Shown returns j as the HTTP API and the CLI show it: Attempts is an empty list, not null,
// for a job that never ran.
func (j Job) Shown() Job {
	if j.Attempts == nil {
		j.Attempts = []Attempt{}
	}
	return j
}
