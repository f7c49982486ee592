package httpapi

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
)

// listBuilds serves GET /v1/builds: a batch read with ?ids=a,b,c, else a page of all builds
// with ?cursor=&limit=.
func (s *server) listBuilds(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	if _, ok := q["ids"]; ok {
		if q.Has("cursor") || q.Has("limit") {
			return redstate.Errorf(redstate.EINVALID, "ids cannot be combined with cursor or limit")
		}
		return s.batchBuilds(w, r, q["ids"])
	}
	limit, err := queryLimit(q)
	if err != nil {
		return err
	}
	return s.streamPage(w, r, s.builds.List, q.Get("cursor"), limit)
}

// batchBuilds answers a batch read of the comma-separated ids (the ids parameter may repeat).
// More than buildstatus.MaxBatch distinct ids is 400 invalid (a bad request, not a large body).
func (s *server) batchBuilds(w http.ResponseWriter, r *http.Request, params []string) error {
	var ids []string
	seen := make(map[string]bool)
	for _, p := range params {
		for raw := range strings.SplitSeq(p, ",") {
			raw = strings.TrimSpace(raw)
			if raw == "" {
				continue
			}
			id, err := buildstatus.NormalizeBuildID(raw)
			if err != nil {
				return redstate.Errorf(redstate.EINVALID, "ids: %q is not a UUID buildId", truncate(raw))
			}
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	if len(ids) == 0 {
		return redstate.Errorf(redstate.EINVALID, "ids must list at least one buildId")
	}
	if len(ids) > buildstatus.MaxBatch {
		return redstate.Errorf(redstate.EINVALID, "ids lists %d builds; at most %d per request", len(ids), buildstatus.MaxBatch)
	}
	return s.streamBatch(w, r, ids)
}

// listProjectBuilds serves GET /v1/projects/{projectId}/builds: a project's builds, newest
// first. projectId is one path segment, percent-decoded ("a%2Fb" is project "a/b").
func (s *server) listProjectBuilds(w http.ResponseWriter, r *http.Request) error {
	project := r.PathValue("projectId")
	if err := buildstatus.ValidateProjectID(project); err != nil {
		return err
	}
	q := r.URL.Query()
	limit, err := queryLimit(q)
	if err != nil {
		return err
	}
	list := func(ctx context.Context, cursor string, limit int) (*buildstatus.Page, error) {
		return s.builds.ListProject(ctx, project, cursor, limit)
	}
	return s.streamPage(w, r, list, q.Get("cursor"), limit)
}

// queryLimit parses ?limit= (absent: the default page size). Errors: EINVALID.
func queryLimit(q url.Values) (int, error) {
	limit := 0
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0, redstate.Errorf(redstate.EINVALID, "limit must be an integer, got %q", truncate(v))
		}
		if n == 0 {
			return 0, redstate.Errorf(redstate.EINVALID, "limit must be between 1 and %d, got 0", buildstatus.MaxListLimit)
		}
		limit = n
	}
	return buildstatus.ValidateLimit(limit)
}
