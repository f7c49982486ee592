package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/index"
)

// maxIndexBatchQueries bounds one batch query.
const maxIndexBatchQueries = 100

// indexRoutes registers the CDC tag index's routes (docs/index.md). Without Deps.Index the routes
// answer 404 naming the missing configuration.
func (s *server) indexRoutes() {
	s.handle("POST /v1/index/events", roleWrite, s.indexEvents)
	s.handle("GET /v1/index/{db}/{table}", roleRead, s.indexQuery)
	s.handle("POST /v1/index/{db}/{table}/batch", roleRead, s.indexBatch)
	s.handle("GET /v1/index/status", roleRead, s.indexStatus)
}

func errNoIndex() error {
	return redstate.Errorf(redstate.ENOTFOUND, "the CDC index is not enabled on this server (declare index.tables)")
}

// eventsRequest is the body of POST /v1/index/events.
type eventsRequest struct {
	// Format is native (default), canal or debezium.
	Format string            `json:"format"`
	Events []json.RawMessage `json:"events"`
	// Offset is the delivery position of events[0] in the producer's stream (a Kafka offset,
	// a running count); event i is at Offset+i. It orders the flat messages of one Canal batch
	// (one id, one es) across requests; a batch sent whole in one request needs none.
	Offset uint64 `json:"offset"`
}

// indexEvents applies a batch of change events: POST /v1/index/events {"format","events"}
// [write] → 200 {"applied","stale","skipped","failed","errors"}. Events that cannot be read or
// converted are counted as failed (and dead-lettered when converted), never failing the batch:
// an event that names a member twice is one of them, refused alone, while the request's own
// members are checked as strictly as every body's. DDL and undeclared tables are skipped. 503
// when the store is unavailable: nothing is lost by resending the whole batch (versions make it
// idempotent).
func (s *server) indexEvents(w http.ResponseWriter, r *http.Request) error {
	if s.index == nil {
		return errNoIndex()
	}
	var req eventsRequest
	if err := s.decodeBodyExcept(w, r, &req, "events"); err != nil {
		return err
	}
	if err := index.CheckFormat(req.Format); err != nil {
		return err
	}
	var parsed index.Parsed
	for i, ev := range req.Events {
		if err := checkJSONShape(ev, s.maxDepth); err != nil {
			parsed.Add(i, nil, false, redstate.Errorf(redstate.EINVALID, "%s", err.Error()))
			continue
		}
		changes, skipped, err := index.ParseEvent(req.Format, ev, req.Offset+uint64(i))
		parsed.Add(i, changes, skipped, err)
	}
	res, err := s.index.Apply(r.Context(), parsed.Changes)
	if err != nil {
		s.indexPush.Record(res, err)
		return err
	}
	res.Skipped += parsed.Skipped
	res.Failed += len(parsed.Errors)
	s.indexPush.Record(res, nil)
	s.index.CountUnreadable(len(parsed.Errors))
	s.index.CountSkipped(parsed.Skipped)
	for _, e := range parsed.Errors {
		if len(res.Errors) < 20 {
			res.Errors = append(res.Errors, e)
		}
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

// indexQueryResponse is the answer of GET /v1/index/{db}/{table}.
type indexQueryResponse struct {
	DB    string                     `json:"db"`
	Table string                     `json:"table"`
	Rows  map[string]json.RawMessage `json:"rows"`
	// Cursor continues a paged query ("0": done); absent for a whole-key answer.
	Cursor string `json:"cursor,omitempty"`
}

// indexQuery answers "rows of db.table matching the conditions": GET
// /v1/index/{db}/{table}?las=72&cat=870[&cursor=0&count=500] [read] → {"db","table","rows"}
// (one HGETALL), or one page with "cursor" when cursor or count is given (HSCAN). 400 when the
// conditions match no declared combination (the message lists them).
func (s *server) indexQuery(w http.ResponseWriter, r *http.Request) error {
	if s.index == nil {
		return errNoIndex()
	}
	db, tbl := r.PathValue("db"), r.PathValue("table")
	q := r.URL.Query()
	conds := map[string]string{}
	for k, v := range q {
		if k == "cursor" || k == "count" {
			continue
		}
		if len(v) != 1 {
			return redstate.Errorf(redstate.EINVALID, "condition %s is given %d times", truncate(k), len(v))
		}
		conds[k] = v[0]
	}
	resp := indexQueryResponse{DB: db, Table: tbl}
	if q.Has("cursor") || q.Has("count") {
		count := 500
		if c := q.Get("count"); c != "" {
			n, err := strconv.Atoi(c)
			if err != nil || n < 1 || n > 10000 {
				return redstate.Errorf(redstate.EINVALID, "count must be 1..10000, got %s", truncate(c))
			}
			count = n
		}
		page, err := s.index.QueryPage(r.Context(), db, tbl, conds, q.Get("cursor"), count)
		if err != nil {
			return err
		}
		resp.Rows, resp.Cursor = page.Rows, page.Cursor
	} else {
		rows, err := s.index.Query(r.Context(), db, tbl, conds)
		if err != nil {
			return err
		}
		resp.Rows = rows
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// indexBatchRequest is the body of POST /v1/index/{db}/{table}/batch.
type indexBatchRequest struct {
	Queries []map[string]string `json:"queries"`
}

// indexBatch answers several queries of one table in one round trip per node: POST
// /v1/index/{db}/{table}/batch {"queries":[{"las":"72","cat":"870"},…]} [read] →
// {"results":[{"rows":{…}},…]} in request order; at most 100 queries.
func (s *server) indexBatch(w http.ResponseWriter, r *http.Request) error {
	if s.index == nil {
		return errNoIndex()
	}
	var req indexBatchRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		return err
	}
	if len(req.Queries) == 0 || len(req.Queries) > maxIndexBatchQueries {
		return redstate.Errorf(redstate.EINVALID, "queries must hold 1..%d queries, got %d", maxIndexBatchQueries, len(req.Queries))
	}
	rows, err := s.index.QueryBatch(r.Context(), r.PathValue("db"), r.PathValue("table"), req.Queries)
	if err != nil {
		return err
	}
	type result struct {
		Rows map[string]json.RawMessage `json:"rows"`
	}
	out := struct {
		Results []result `json:"results"`
	}{Results: make([]result, len(rows))}
	for i, r := range rows {
		out.Results[i].Rows = r
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
