package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/redstate/redstate/buildstatus"
)

// Listing chunks: a page is fetched from the store as several smaller pages, each written to
// the client before the next is fetched, so a page of 1,000 builds costs Redis replies of at
// most listChunkBuilds documents and the server the memory of one chunk.
const (
	// listChunkBuilds is the most builds one chunk asks the store for (one MGET of at most
	// this many keys).
	listChunkBuilds = 100
	// listChunkBytes is the target size of a chunk after the first, sized by the average
	// document seen so far.
	listChunkBytes = 4 << 20
)

// listFunc reads one page of a listing (buildstatus.Store.List, or ListProject of one project).
type listFunc func(ctx context.Context, cursor string, limit int) (*buildstatus.Page, error)

// streamPage answers one page of a listing of up to limit builds, resuming after cursor:
//
//	{"builds":[<document>,...],"cursor":"<next>"}
//
// The page is read with list in chunks (the first of batchFirstChunk builds, then up to
// listChunkBuilds sized to about listChunkBytes by the average document), each written as it
// arrives under its own write deadline; documents are written as stored. A read that may answer
// more than heavyReadBuilds builds first takes a heavy-read slot. The page ends early, with the
// cursor that continues it, when the next chunk would take the response past s.maxResponse.
// When a chunk after the first fails, the answer ends with the cursor of what was sent and
// "error" says why; a failing first chunk is an ordinary error answer.
func (s *server) streamPage(w http.ResponseWriter, r *http.Request, list listFunc, cursor string, limit int) error {
	start := time.Now()
	release, err := s.heavySlot(r, limit)
	if err != nil {
		return err
	}
	defer release()
	ctx := r.Context()
	page, err := list(ctx, cursor, min(limit, batchFirstChunk))
	if err != nil {
		return err
	}
	out := s.startStreamedJSON(w, start)
	out.write(`{"builds":[`)
	var written, docBytes int
	var chunkErr error
	sep := ""
	for {
		for _, b := range page.Builds {
			out.write(sep)
			out.writeBytes(b.JSON)
			sep = ","
			docBytes += len(b.JSON)
			written++
		}
		cursor = page.Cursor
		page = nil // let the chunk's documents go before the next fetch
		out.endChunk()
		if out.failed() != nil {
			return nil // the client stopped reading; the connection is closed
		}
		if cursor == "" || written >= limit {
			break
		}
		size := min(limit-written, listChunkBuilds)
		if written > 0 {
			avg := max(1, docBytes/written)
			size = min(size, max(1, listChunkBytes/avg))
			if out.n+int64(size*avg) > s.maxResponse {
				break
			}
		}
		if page, chunkErr = list(ctx, cursor, size); chunkErr != nil {
			break
		}
		out.startChunk()
	}
	out.startChunk()
	out.write(`],"cursor":`)
	out.writeJSON(cursor)
	out.finish(chunkErr)
	return nil
}
