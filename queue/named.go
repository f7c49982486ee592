package queue

// NamedStats is a queue's Stats with its name and whether it is paused: the answer of GET
// /v1/queues/{queue}/stats and of `redstate queue stats --json`.
type NamedStats struct {
	// Queue is the queue's name.
	Queue string `json:"queue"`
	Stats
	// Paused is true while the queue is paused (Admin.Pause): its workers take no jobs.
	Paused bool `json:"paused"`
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
