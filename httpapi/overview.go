package httpapi

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/buildinfo"
	"github.com/redstate/redstate/queue"
)

// Overview is the dashboard's first page: what runs, on what, and whether it is healthy.
type Overview struct {
	// Version is the server's version (Build.Version).
	Version string `json:"version"`
	// Build is what the server was built from.
	Build buildinfo.Info `json:"build"`
	// Redis is the configured Redis and whether it answers.
	Redis RedisOverview `json:"redis"`
	// Blocks are the blocks, each with its backend and status.
	Blocks []BlockOverview `json:"blocks"`
	// Degraded lists what runs degraded (empty when nothing does).
	Degraded []string `json:"degraded"`
}

// RedisOverview describes the Redis deployment.
type RedisOverview struct {
	// Mode is "memory" (none configured), "standalone", "cluster" or "sentinel".
	Mode string `json:"mode"`
	// Describe names the servers (passwords removed).
	Describe string `json:"describe,omitempty"`
	// Reachable reports whether a PING answered; LatencyMS is its round trip.
	Reachable bool    `json:"reachable"`
	LatencyMS float64 `json:"latencyMs,omitempty"`
	// Error says why it is not reachable.
	Error string `json:"error,omitempty"`
}

// BlockOverview is one block's line of the overview.
type BlockOverview struct {
	// Name is the block: builds, queue, executor, index, feed.
	Name string `json:"name"`
	// Backend is where its state lives, e.g. "redis", "memory", "redis + sql (sqlite)".
	Backend string `json:"backend"`
	// Status is "ok", "degraded" (serving from a fallback) or "off" (not configured).
	Status string `json:"status"`
	// Detail explains a degraded status or names the mode (e.g. the breaker state).
	Detail string `json:"detail,omitempty"`
}

// overviewRoutes registers the overview and the queue list and throughput routes.
func (s *server) overviewRoutes() {
	s.handle("GET /v1/overview", roleRead, s.overview)
	s.handle("GET /v1/queues", roleAdmin, s.queueList)
	s.handle("GET /v1/queues/{queue}/throughput", roleAdmin, s.queueThroughput)
}

// overview answers the overview (the Overview dependency fills it; 404 without one).
func (s *server) overview(w http.ResponseWriter, r *http.Request) error {
	if s.overviewFn == nil {
		return redstate.Errorf(redstate.ENOTFOUND, "this server has no overview")
	}
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	o := s.overviewFn(ctx)
	if o.Degraded == nil {
		o.Degraded = []string{}
	}
	writeJSON(w, http.StatusOK, o)
	return nil
}

// queueSummary is one queue of GET /v1/queues.
type queueSummary struct {
	Name  string      `json:"name"`
	Stats queue.Stats `json:"stats"`
	// Paused is true while the queue is paused (its workers take no jobs).
	Paused bool `json:"paused"`
	// Pool is the pool serving the queue; nil (omitted) when it is in no pool.
	Pool *queue.PoolMembership `json:"pool,omitempty"`
	// Error is set when the queue's stats could not be read.
	Error string `json:"error,omitempty"`
}

// queueListAnswer is the answer of GET /v1/queues.
type queueListAnswer struct {
	Queues []queueSummary `json:"queues"`
	// Total is how many queues match (all of them without ?match=), on every page.
	Total int `json:"total"`
	// Next is the cursor of the next page (the last name of this one); absent after the last.
	Next string `json:"next,omitempty"`
}

// queueList answers the configured queues, sorted by name, with their stats and whether they
// are paused: every one, or
// with ?limit= one page of them after ?cursor= (the previous page's next). ?match= keeps the
// names containing it (case-insensitive). Only the answered queues' stats are read, so a page
// costs the same with 10 or 10,000 queues configured. Errors: EINVALID (limit).
func (s *server) queueList(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	limit, err := queryInt(r, "limit", 0)
	if err != nil {
		return err
	}
	if limit < 0 || limit > queue.MaxListCount || (q.Has("limit") && limit == 0) {
		return redstate.Errorf(redstate.EINVALID, "limit must be 1..%d, got %d", queue.MaxListCount, limit)
	}
	var names []string
	if s.queueNames != nil {
		names = s.queueNames()
	}
	if m := strings.ToLower(q.Get("match")); m != "" {
		names = slices.DeleteFunc(slices.Clone(names), func(n string) bool { return !strings.Contains(strings.ToLower(n), m) })
	}
	out := queueListAnswer{Queues: []queueSummary{}, Total: len(names)}
	if c := q.Get("cursor"); c != "" {
		i, _ := slices.BinarySearch(names, c)
		for i < len(names) && names[i] <= c {
			i++
		}
		names = names[i:]
	}
	if limit > 0 && len(names) > limit {
		names = names[:limit]
		out.Next = names[limit-1]
	}
	for _, name := range names {
		a := s.queues(name)
		if a == nil {
			continue
		}
		out.Queues = append(out.Queues, s.queueSummaryOf(r.Context(), name, a))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// queueSummaryOf reads one queue's entry of GET /v1/queues (and of the dashboard's queues
// topic): its stats, whether it is paused, its pool; a read that failed is in Error.
func (s *server) queueSummaryOf(ctx context.Context, name string, a *queue.Admin) queueSummary {
	st, err := a.Stats(ctx)
	q := queueSummary{Name: name, Stats: st, Pool: s.poolOf(name)}
	if err == nil {
		q.Paused, err = a.Paused(ctx)
	}
	if err != nil {
		q.Error = err.Error()
	}
	return q
}

// poolOf returns the pool serving queue name, or nil.
func (s *server) poolOf(name string) *queue.PoolMembership {
	if s.queuePool == nil {
		return nil
	}
	return s.queuePool(name)
}

// throughputMinute is one minute of GET /v1/queues/{queue}/throughput.
type throughputMinute struct {
	// Minute is the minute's start (UTC).
	Minute time.Time `json:"minute"`
	// Counts are jobs by outcome (acked, retried, dead, malformed, lost).
	Counts map[string]int64 `json:"counts"`
}

// queueThroughput answers a queue's jobs per minute and outcome over the last ?minutes=
// (default 180, at most 1440), oldest first, every minute present (zero counts included),
// from the figures every instance writes to the shared store.
func (s *server) queueThroughput(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("queue")
	if s.queues == nil || s.queues(name) == nil {
		return redstate.Errorf(redstate.ENOTFOUND, "queue %q is not configured on this server", truncate(name))
	}
	if s.throughput == nil {
		return redstate.Errorf(redstate.ENOTFOUND, "this server keeps no throughput figures")
	}
	minutes := 180
	if v := r.URL.Query().Get("minutes"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > queue.MaxThroughputMinutes {
			return redstate.Errorf(redstate.EINVALID, "minutes must be 1..%d, got %q", queue.MaxThroughputMinutes, truncate(v))
		}
		minutes = n
	}
	to := time.Now().Unix() / 60
	from := to - int64(minutes) + 1
	got, err := s.throughput.Throughput(r.Context(), name, from, to)
	if err != nil {
		return err
	}
	out := make([]throughputMinute, 0, minutes)
	for m := from; m <= to; m++ {
		c := got[m]
		if c == nil {
			c = map[string]int64{}
		}
		out = append(out, throughputMinute{Minute: time.Unix(m*60, 0).UTC(), Counts: c})
	}
	writeJSON(w, http.StatusOK, map[string]any{"queue": name, "minutes": out})
	return nil
}
