package queue

// NamedStats is a queue's Stats with its name: the answer of GET /v1/queues/{queue}/stats and
// of `redstate queue stats --json`.
type NamedStats struct {
	// Queue is the queue's name.
	Queue string `json:"queue"`
	Stats
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
