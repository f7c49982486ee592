package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/feed"
)

// feedRoutes registers the feed's routes (docs/feed.md). The viewer is passed explicitly: the
// calling back-end authenticates its users. Without Deps.Feed the routes answer 404.
func (s *server) feedRoutes() {
	s.handle("POST /v1/feed/posts", roleWrite, s.feedPublish)
	s.handle("POST /v1/feed/posts/{post}/announce", roleWrite, s.feedAnnounce)
	s.handle("POST /v1/feed/users/{viewer}/following/sync", roleWrite, s.feedFollowsChanged)
	s.handle("POST /v1/feed/users/{viewer}/read/{post}", roleWrite, s.feedMarkRead)
	s.handle("POST /v1/feed/users/{viewer}/authors/{author}/read-all", roleWrite, s.feedMarkAuthorRead)
	s.handle("PUT /v1/feed/users/{viewer}/following/{author}", roleWrite, s.feedFollow(true))
	s.handle("DELETE /v1/feed/users/{viewer}/following/{author}", roleWrite, s.feedFollow(false))
	s.handle("PUT /v1/feed/users/{viewer}/likes/{post}", roleWrite, s.feedLike(true))
	s.handle("DELETE /v1/feed/users/{viewer}/likes/{post}", roleWrite, s.feedLike(false))
	s.handle("GET /v1/feed/users/{viewer}/authors/{author}/posts", roleRead, s.feedQuery)
	s.handle("GET /v1/feed/users/{viewer}/unread-counts", roleRead, s.feedCounts)
	s.handle("GET /v1/feed/users/{viewer}/events", roleRead, s.feedEvents)
}

func errNoFeed() error {
	return redstate.Errorf(redstate.ENOTFOUND, "the feed is not enabled on this server (feed.enabled)")
}

// idParam parses a positive integer path segment.
func idParam(r *http.Request, name string) (int64, error) {
	v := r.PathValue(name)
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id <= 0 {
		return 0, redstate.Errorf(redstate.EINVALID, "%s must be a positive integer, got %s", name, truncate(v))
	}
	return id, nil
}

// idParams parses two positive integer path segments.
func idParams(r *http.Request, a, b string) (int64, int64, error) {
	x, err := idParam(r, a)
	if err != nil {
		return 0, 0, err
	}
	y, err := idParam(r, b)
	return x, y, err
}

// publishRequest is the seed's Blog as saveBlog receives it.
type publishRequest struct {
	UserID  int64    `json:"userId"`
	Title   string   `json:"title"`
	Content string   `json:"content"`
	Images  []string `json:"images"`
}

// feedPublish is saveBlog: POST /v1/feed/posts {"userId","title","content","images"} [write]
// → 201 with the stored post; the fan-out to followers runs durably in the background.
func (s *server) feedPublish(w http.ResponseWriter, r *http.Request) error {
	if s.feed == nil {
		return errNoFeed()
	}
	var req publishRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		return err
	}
	if req.Images == nil {
		req.Images = []string{}
	}
	p, err := s.feed.Publish(r.Context(), feed.Post{AuthorID: req.UserID, Title: req.Title, Content: req.Content, Images: req.Images})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, p)
	return nil
}

// feedAnnounce: POST /v1/feed/posts/{post}/announce [write] → 200 with the post read from SQL,
// after caching, indexing and fanning it out (feed.Service.Announce): how an application that
// owns the posts table (feed.sql.owns-tables false) publishes.
func (s *server) feedAnnounce(w http.ResponseWriter, r *http.Request) error {
	if s.feed == nil {
		return errNoFeed()
	}
	id, err := idParam(r, "post")
	if err != nil {
		return err
	}
	p, err := s.feed.Announce(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, p)
	return nil
}

// feedFollowsChanged: POST /v1/feed/users/{viewer}/following/sync [write] → 204 after merging
// the viewer's state from the follows in SQL (feed.Service.FollowsChanged).
func (s *server) feedFollowsChanged(w http.ResponseWriter, r *http.Request) error {
	if s.feed == nil {
		return errNoFeed()
	}
	viewer, err := idParam(r, "viewer")
	if err != nil {
		return err
	}
	if err := s.feed.FollowsChanged(r.Context(), viewer); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// feedMarkRead is markBlogAsRead: POST /v1/feed/users/{viewer}/read/{post} → 204.
func (s *server) feedMarkRead(w http.ResponseWriter, r *http.Request) error {
	if s.feed == nil {
		return errNoFeed()
	}
	viewer, post, err := idParams(r, "viewer", "post")
	if err != nil {
		return err
	}
	if err := s.feed.MarkRead(r.Context(), viewer, post); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// feedMarkAuthorRead: POST /v1/feed/users/{viewer}/authors/{author}/read-all → {"marked": n}.
func (s *server) feedMarkAuthorRead(w http.ResponseWriter, r *http.Request) error {
	if s.feed == nil {
		return errNoFeed()
	}
	viewer, author, err := idParams(r, "viewer", "author")
	if err != nil {
		return err
	}
	n, err := s.feed.MarkAuthorRead(r.Context(), viewer, author)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]int64{"marked": n})
	return nil
}

// feedFollow: PUT (follow) or DELETE (unfollow) /v1/feed/users/{viewer}/following/{author} →
// {"changed": bool}.
func (s *server) feedFollow(follow bool) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if s.feed == nil {
			return errNoFeed()
		}
		viewer, author, err := idParams(r, "viewer", "author")
		if err != nil {
			return err
		}
		var changed bool
		if follow {
			changed, err = s.feed.Follow(r.Context(), viewer, author)
		} else {
			changed, err = s.feed.Unfollow(r.Context(), viewer, author)
		}
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, map[string]bool{"changed": changed})
		return nil
	}
}

// feedLike: PUT (like) or DELETE (unlike) /v1/feed/users/{viewer}/likes/{post} → {"changed"}.
func (s *server) feedLike(like bool) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if s.feed == nil {
			return errNoFeed()
		}
		viewer, post, err := idParams(r, "viewer", "post")
		if err != nil {
			return err
		}
		changed, err := s.feed.Like(r.Context(), viewer, post, like)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, map[string]bool{"changed": changed})
		return nil
	}
}

// feedPage is the answer of the posts query.
type feedPage struct {
	Records []feed.PostView `json:"records"`
	HasMore bool            `json:"hasMore"`
	// Next is the cursor of the following page ("" when there is none).
	Next    string `json:"next,omitempty"`
	Current int    `json:"current,omitempty"`
	Size    int    `json:"size"`
}

// feedQuery is queryUserBlogByReadStatus: GET /v1/feed/users/{viewer}/authors/{author}/posts
// ?readStatus=ALL|UNREAD&size=10 and either &current=N (the seed's page number) or
// &cursor=<next of the previous page> (stable under concurrent publishing).
func (s *server) feedQuery(w http.ResponseWriter, r *http.Request) error {
	if s.feed == nil {
		return errNoFeed()
	}
	viewer, author, err := idParams(r, "viewer", "author")
	if err != nil {
		return err
	}
	q := r.URL.Query()
	size := 10
	if v := q.Get("size"); v != "" {
		if size, err = strconv.Atoi(v); err != nil {
			return redstate.Errorf(redstate.EINVALID, "size must be an integer, got %s", truncate(v))
		}
	}
	status := strings.ToUpper(q.Get("readStatus"))
	var page feed.Page
	resp := feedPage{Size: size}
	if c := q.Get("cursor"); c != "" || q.Get("current") == "" {
		cur, err := parseFeedCursor(c)
		if err != nil {
			return err
		}
		page, err = s.feed.QueryPage(r.Context(), viewer, author, status, cur, size)
		if err != nil {
			return err
		}
	} else {
		current, err := strconv.Atoi(q.Get("current"))
		if err != nil {
			return redstate.Errorf(redstate.EINVALID, "current must be an integer, got %s", truncate(q.Get("current")))
		}
		if page, err = s.feed.QueryPageNumber(r.Context(), viewer, author, status, current, size); err != nil {
			return err
		}
		resp.Current = current
	}
	resp.Records, resp.HasMore = page.Posts, page.HasMore
	if page.HasMore {
		resp.Next = fmt.Sprintf("%d_%d", page.Next.Time.UnixMilli(), page.Next.ID)
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// parseFeedCursor reads "<create time ms>_<id>" ("" is the start).
func parseFeedCursor(c string) (feed.Cursor, error) {
	if c == "" {
		return feed.Cursor{}, nil
	}
	t, id, ok := strings.Cut(c, "_")
	ms, err1 := strconv.ParseInt(t, 10, 64)
	n, err2 := strconv.ParseInt(id, 10, 64)
	if !ok || err1 != nil || err2 != nil || n <= 0 || ms < 0 {
		return feed.Cursor{}, redstate.Errorf(redstate.EINVALID, "cursor %s is not a cursor this server returned", truncate(c))
	}
	return feed.Cursor{Time: time.UnixMilli(ms).UTC(), ID: n}, nil
}

// feedCounts: GET /v1/feed/users/{viewer}/unread-counts → {"counts":{"<author>":n},"total":n}.
func (s *server) feedCounts(w http.ResponseWriter, r *http.Request) error {
	if s.feed == nil {
		return errNoFeed()
	}
	viewer, err := idParam(r, "viewer")
	if err != nil {
		return err
	}
	counts, total, err := s.feed.UnreadCounts(r.Context(), viewer)
	if err != nil {
		return err
	}
	writeRawJSON(w, http.StatusOK, feedCountsJSON(counts, total))
	return nil
}

// feedCountsJSON is the data of a counts event and of GET …/unread-counts.
func feedCountsJSON(counts map[int64]int64, total int64) []byte {
	out := make(map[string]int64, len(counts))
	for a, n := range counts {
		out[strconv.FormatInt(a, 10)] = n
	}
	b, _ := json.Marshal(struct {
		Counts map[string]int64 `json:"counts"`
		Total  int64            `json:"total"`
	}{out, total})
	return b
}

// feedEvents streams a user's unread counts: GET /v1/feed/users/{viewer}/events [read] is a
// Server-Sent Events stream that sends "counts" ({"counts","total"}) at once and again whenever
// they change — on a publish fanned out to the viewer or a read, on any instance (Redis
// Pub/Sub), and at the latest at the next heartbeat (a ": ping" comment), when counts are
// re-read (hybrid authors' posts are noticed then).
func (s *server) feedEvents(w http.ResponseWriter, r *http.Request) error {
	if s.feed == nil {
		return errNoFeed()
	}
	viewer, err := idParam(r, "viewer")
	if err != nil {
		return err
	}
	return serveSSE(s, w, r, func(ctx context.Context) (sseSource[struct{}], error) {
		signal, unsubscribe := s.feed.Subscribe(viewer)
		counts, total, err := s.feed.UnreadCounts(ctx, viewer)
		if err != nil {
			unsubscribe()
			return sseSource[struct{}]{}, err
		}
		last := feedCountsJSON(counts, total)
		refresh := func(st *sseWriter) {
			if counts, total, err := s.feed.UnreadCounts(ctx, viewer); err == nil {
				if b := feedCountsJSON(counts, total); !bytes.Equal(b, last) {
					st.event("counts", "", b)
					last = b
				}
			}
		}
		return sseSource[struct{}]{
			open:   func(st *sseWriter) { st.event("counts", "", last) },
			events: signal,
			event:  func(st *sseWriter, _ struct{}) bool { refresh(st); return true },
			beat:   refresh,
			stop:   unsubscribe,
		}, nil
	})
}
