package memstore

import (
	"context"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
)

// Save implements buildstatus.Store.
func (s *Store) Save(_ context.Context, doc *buildstatus.PublishResponse, opts buildstatus.SaveOptions) (*buildstatus.Build, error) {
	if doc == nil {
		return nil, redstate.Errorf(redstate.EINVALID, "body must be a JSON object")
	}
	if err := checkID(doc.BuildID); err != nil {
		return nil, err
	}
	if err := buildstatus.Validate(doc); err != nil {
		return nil, err
	}
	stored, err := buildstatus.Encode(doc)
	if err != nil {
		if redstate.IsCode(err, redstate.ETOOLARGE) {
			return nil, err
		}
		return nil, redstate.Wrap(redstate.EINVALID, err, "document cannot be encoded as JSON")
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	cur := s.live(doc.BuildID, now)
	switch {
	case opts.IfNoneMatch && cur != nil:
		return nil, redstate.Errorf(redstate.EPRECONDITION, "build %s already exists", doc.BuildID)
	case opts.IfMatch != "" && cur == nil:
		return nil, redstate.Errorf(redstate.ENOTFOUND, "build %s not found", doc.BuildID)
	case opts.IfMatch != "" && cur.etag != opts.IfMatch:
		return nil, redstate.Errorf(redstate.EPRECONDITION, "build %s has changed (ETag %s, expected %s)", doc.BuildID, cur.etag, opts.IfMatch)
	case cur != nil && cur.project != doc.ProjectID:
		return nil, redstate.Errorf(redstate.ECONFLICT, "build %s belongs to project %q; a build's projectId never changes", doc.BuildID, cur.project)
	}
	e := s.write(cur, doc, stored, now)
	return e.build()
}

// write stores a new value of a build (cur is its live entry, nil if none), refreshes its TTL and
// project-index entry and publishes an EventSaved. Callers hold s.mu for writing.
func (s *Store) write(cur *entry, doc *buildstatus.PublishResponse, stored []byte, now time.Time) *entry {
	e := cur
	if e == nil {
		if old := s.builds[doc.BuildID]; old != nil { // expired, not yet swept
			s.remove(old)
		}
		s.seq++
		e = &entry{id: doc.BuildID, project: doc.ProjectID, seq: s.seq, heapIdx: -1}
		s.builds[e.id] = e
		s.order.add(e)
	} else {
		s.projectRemove(e)
	}
	e.json = stored
	e.etag = buildstatus.ETagOf(stored)
	e.score = buildstatus.ProjectScore(doc, now)
	e.expireAt = now.Add(s.ttl)
	s.expiry.set(e)
	s.projectAdd(e)
	s.watchers.publish(buildstatus.Event{Type: buildstatus.EventSaved, BuildID: e.id, ETag: e.etag, Build: e.json})
	return e
}

// Get implements buildstatus.Store.
func (s *Store) Get(_ context.Context, buildID string) (*buildstatus.Build, error) {
	if err := checkID(buildID); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := s.live(buildID, s.now())
	if e == nil {
		return nil, notFound(buildID)
	}
	return e.build()
}

// GetMany implements buildstatus.Store.
func (s *Store) GetMany(_ context.Context, ids []string) (map[string]*buildstatus.Build, error) {
	if len(ids) > buildstatus.MaxBatch {
		return nil, redstate.Errorf(redstate.EINVALID, "at most %d ids per batch, got %d", buildstatus.MaxBatch, len(ids))
	}
	for _, id := range ids {
		if err := checkID(id); err != nil {
			return nil, err
		}
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	now := s.now()
	out := make(map[string]*buildstatus.Build, len(ids))
	for _, id := range ids {
		if _, seen := out[id]; seen {
			continue
		}
		if e := s.live(id, now); e != nil {
			b, err := e.build()
			if err != nil {
				return nil, err
			}
			out[id] = b
		}
	}
	return out, nil
}

// Exists implements buildstatus.Store.
func (s *Store) Exists(_ context.Context, buildID string) (bool, error) {
	if err := checkID(buildID); err != nil {
		return false, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.live(buildID, s.now()) != nil, nil
}

// TTL implements buildstatus.Store.
func (s *Store) TTL(_ context.Context, buildID string) (time.Duration, error) {
	if err := checkID(buildID); err != nil {
		return 0, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	now := s.now()
	e := s.live(buildID, now)
	if e == nil {
		return 0, notFound(buildID)
	}
	return e.expireAt.Sub(now), nil
}

// Delete implements buildstatus.Store.
func (s *Store) Delete(_ context.Context, buildID, ifMatch string) error {
	if err := checkID(buildID); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.live(buildID, s.now())
	if e == nil {
		return notFound(buildID)
	}
	if ifMatch != "" && e.etag != ifMatch {
		return redstate.Errorf(redstate.EPRECONDITION, "build %s has changed (ETag %s, expected %s)", buildID, e.etag, ifMatch)
	}
	s.remove(e)
	s.watchers.publish(buildstatus.Event{Type: buildstatus.EventDeleted, BuildID: buildID})
	return nil
}

// UpdatePlatform implements buildstatus.Store. The read, the change and the write happen under
// one lock, so concurrent updates of different platforms never overwrite each other.
func (s *Store) UpdatePlatform(_ context.Context, buildID string, result *buildstatus.PlatformResult, ifMatch string) (*buildstatus.Build, error) {
	if err := checkID(buildID); err != nil {
		return nil, err
	}
	if result == nil {
		return nil, redstate.Errorf(redstate.EINVALID, "platform result must be a JSON object")
	}
	if err := buildstatus.ValidatePlatformResult(result); err != nil {
		return nil, err
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	cur := s.live(buildID, now)
	if cur == nil {
		return nil, notFound(buildID)
	}
	if ifMatch != "" && cur.etag != ifMatch {
		return nil, redstate.Errorf(redstate.EPRECONDITION, "build %s has changed (ETag %s, expected %s)", buildID, cur.etag, ifMatch)
	}
	prev, err := cur.build()
	if err != nil {
		return nil, err
	}
	prevDoc, err := prev.Doc()
	if err != nil {
		return nil, redstate.Wrap(redstate.EINTERNAL, err, "stored build "+buildID+" cannot be decoded")
	}
	doc := buildstatus.ApplyPlatformResult(prevDoc, result, now)
	if err := buildstatus.Validate(doc); err != nil {
		return nil, err
	}
	stored, err := buildstatus.Encode(doc)
	if err != nil {
		if redstate.IsCode(err, redstate.ETOOLARGE) {
			return nil, err
		}
		return nil, redstate.Wrap(redstate.EINTERNAL, err, "updated build cannot be encoded as JSON")
	}
	e := s.write(cur, doc, stored, now)
	return e.build()
}

func notFound(buildID string) error {
	return redstate.Errorf(redstate.ENOTFOUND, "build %s not found or expired", buildID)
}
