package httpapi

import (
	"testing"
)

// TestQueues_DeadLettersStreamedInChunks: a dead-letter page larger than one chunk (100) holds
// every letter once, newest first, with the same content as pages of one chunk.
func TestQueues_DeadLettersStreamedInChunks(t *testing.T) {
	ra := newReportAPI(t, false)
	const n = 230
	for i := range n {
		ra.bury(t, int64(i+1))
	}
	big := decode[deadLettersResponse](t, ra.do("GET", "/v1/queues/report:queue/dead?count=1000", ""))
	if big.Queue != "report:queue" || big.Start != 0 || len(big.DeadLetters) != n {
		t.Fatalf("queue %q start %d, %d letters, want %d", big.Queue, big.Start, len(big.DeadLetters), n)
	}
	for i, dl := range big.DeadLetters {
		if dl.Message == nil || recordOf(dl.Message) != int64(n-i) {
			t.Fatalf("letter %d: %+v, want record %d (newest first)", i, dl.Message, n-i)
		}
	}
	mid := decode[deadLettersResponse](t, ra.do("GET", "/v1/queues/report:queue/dead?start=50&count=120", ""))
	if mid.Start != 50 || len(mid.DeadLetters) != 120 || mid.DeadLetters[0].Raw != big.DeadLetters[50].Raw ||
		mid.DeadLetters[119].Raw != big.DeadLetters[169].Raw {
		t.Fatalf("start=50 count=120: start %d, %d letters", mid.Start, len(mid.DeadLetters))
	}
}
