package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/redstate/redstate"
)

// chunkWriter writes a streamed response chunk by chunk, each under its own write deadline, so
// that a client that stops reading holds at most one chunk in memory and is dropped after
// s.chunkWrite (and in any case once the response has taken the server's write timeout). After
// a failed write (the client went away or stalled) every later write is skipped and failed
// reports the error, so the handler stops fetching.
type chunkWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	n       int64 // bytes written
	err     error // first write error
	timeout time.Duration
	end     time.Time // overall deadline of the response; zero: none
}

// newChunkWriter returns a writer for the response w of a request that started at start.
func (s *server) newChunkWriter(w http.ResponseWriter, start time.Time) *chunkWriter {
	c := &chunkWriter{w: w, rc: http.NewResponseController(w), timeout: s.chunkWrite}
	if s.writeTimeout > 0 {
		c.end = start.Add(s.writeTimeout)
	}
	return c
}

// startStreamedJSON sends the 200 header of a JSON answer streamed in chunks and returns the
// writer of its body, its first chunk started.
func (s *server) startStreamedJSON(w http.ResponseWriter, start time.Time) *chunkWriter {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	out := s.newChunkWriter(w, start)
	out.startChunk()
	w.WriteHeader(http.StatusOK)
	return out
}

// startChunk sets the write deadline of the next chunk. Writers without deadlines (test
// recorders) are written without one.
func (c *chunkWriter) startChunk() {
	deadline := time.Now().Add(c.timeout)
	if !c.end.IsZero() && c.end.Before(deadline) {
		deadline = c.end
	}
	_ = c.rc.SetWriteDeadline(deadline)
}

// endChunk flushes the chunk to the client, still under its deadline.
func (c *chunkWriter) endChunk() {
	if c.err == nil {
		if err := c.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
			c.err = err
		}
	}
}

// finish writes the last chunk of a streamed object: an "error" member naming chunkErr when a
// later chunk could not be read (the answer is then partial), and the closing brace.
func (c *chunkWriter) finish(chunkErr error) {
	if chunkErr != nil {
		c.write(`,"error":`)
		c.writeJSON(redstate.ErrorMessage(chunkErr))
	}
	c.write("}")
	c.endChunk()
}

// failed reports the first write error (nil while the client keeps reading).
func (c *chunkWriter) failed() error { return c.err }

func (c *chunkWriter) write(s string) { c.writeBytes([]byte(s)) }

func (c *chunkWriter) writeBytes(b []byte) {
	if c.err != nil {
		return
	}
	n, err := c.w.Write(b)
	c.n += int64(n)
	c.err = err
}

func (c *chunkWriter) writeJSON(v any) {
	b, _ := json.Marshal(v)
	c.writeBytes(b)
}
