package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/redstate/redstate/queue"
)

// deadLetterChunk is the most dead letters read from the queue per round trip.
const deadLetterChunk = 100

// streamDeadLetters answers count dead letters from start as a queue.DeadLetterPage, read in
// chunks of deadLetterChunk and written as they arrive, each chunk under its own write
// deadline; a request for more than heavyReadBuilds letters first takes a heavy-read slot. A
// dead letter holds a message of up to the body limit twice (raw and decoded), so a page of
// 1,000 could otherwise be gigabytes in memory at once. A failure of a later chunk aborts the
// response (the client sees a truncated body, never a silently short list).
func (s *server) streamDeadLetters(w http.ResponseWriter, r *http.Request, a *queue.Admin, name string, start, count int) error {
	began := time.Now()
	release, err := s.heavySlot(r, count)
	if err != nil {
		return err
	}
	defer release()
	n := min(count, deadLetterChunk)
	list, err := a.DeadLetters(r.Context(), start, n)
	if err != nil {
		return err
	}
	out := s.startStreamedJSON(w, began)
	out.write(`{"queue":`)
	out.writeJSON(name)
	out.write(`,"start":` + strconv.Itoa(start) + `,"deadLetters":[`)
	sep, sent := "", 0
	for {
		for _, dl := range list {
			out.write(sep)
			out.writeJSON(dl)
			sep = ","
		}
		sent += len(list)
		full := len(list) == n
		list = nil
		out.endChunk()
		if out.failed() != nil {
			return nil // the client stopped reading; the connection is closed
		}
		if !full || sent >= count {
			break
		}
		n = min(count-sent, deadLetterChunk)
		if list, err = a.DeadLetters(r.Context(), start+sent, n); err != nil {
			panic(http.ErrAbortHandler)
		}
		out.startChunk()
	}
	out.startChunk()
	out.write("]}")
	out.endChunk()
	return nil
}
