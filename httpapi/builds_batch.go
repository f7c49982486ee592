package httpapi

import (
	"net/http"
	"strconv"
	"time"
)

// Batch-read chunking: the ids are fetched in chunks so that only one chunk's documents are in
// memory at a time, the response is streamed, and its size is bounded.
const (
	// batchFirstChunk is the size of the first chunk (at most 32 MiB of documents).
	batchFirstChunk = 32
	// batchChunkBytes is the target size of the later chunks, sized by the average document
	// seen so far.
	batchChunkBytes = 4 << 20
	// DefaultMaxResponseBytes bounds a batch response when Config.MaxResponseBytes is 0.
	DefaultMaxResponseBytes = 32 << 20
)

// streamBatch answers a batch read of ids (distinct, canonical, at most MaxBatch):
//
//	{"builds":{"<id>":<document>,...},"missing":["<id>",...],"deferred":["<id>",...]}
//
// Documents are fetched in chunks and written as they arrive, never re-encoded. Once the
// response would pass s.maxResponse bytes, the remaining ids are listed under "deferred"
// (omitted when empty) for the client to ask for again; the same happens when a later chunk
// fails (then "error" says why). A failure of the first chunk is an ordinary error answer.
// Each chunk is written under its own write deadline (see chunkWriter); a batch of more than
// heavyReadBuilds ids first takes a heavy-read slot.
func (s *server) streamBatch(w http.ResponseWriter, r *http.Request, ids []string) error {
	began := time.Now()
	release, err := s.heavySlot(r, len(ids))
	if err != nil {
		return err
	}
	defer release()
	first := min(batchFirstChunk, len(ids))
	found, err := s.builds.GetMany(r.Context(), ids[:first])
	if err != nil {
		return err
	}
	out := s.startStreamedJSON(w, began)

	out.write(`{"builds":{`)
	var missing, deferred []string
	var docBytes, docs int
	var chunkErr error
	next, sep := first, ""
	for start := 0; start < len(ids); {
		chunk := ids[start:next]
		for i, id := range chunk {
			b, ok := found[id]
			if !ok {
				missing = append(missing, id)
				continue
			}
			if docs > 0 && out.n+int64(len(b.JSON))+int64(len(id))+8 > s.maxResponse {
				deferred = append(deferred, chunk[i:]...)
				deferred = append(deferred, ids[next:]...)
				next = len(ids)
				break
			}
			out.write(sep + strconv.Quote(id) + ":")
			out.writeBytes(b.JSON)
			sep = ","
			docBytes += len(b.JSON)
			docs++
		}
		found = nil // let the chunk's documents go before the next fetch
		out.endChunk()
		if out.failed() != nil {
			return nil // the client stopped reading; the connection is closed
		}
		start = next
		if start >= len(ids) {
			break
		}
		size := len(ids) - start
		if docs > 0 {
			size = min(size, max(1, batchChunkBytes/max(1, docBytes/docs)))
		}
		next = start + size
		if found, chunkErr = s.builds.GetMany(r.Context(), ids[start:next]); chunkErr != nil {
			deferred = append(deferred, ids[start:]...)
			break
		}
		out.startChunk()
	}
	out.startChunk()
	out.write(`},"missing":`)
	out.writeJSON(nonNil(missing))
	if len(deferred) > 0 {
		out.write(`,"deferred":`)
		out.writeJSON(deferred)
	}
	out.finish(chunkErr)
	return nil
}

// nonNil returns s, or an empty slice for nil (so it encodes as []).
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
