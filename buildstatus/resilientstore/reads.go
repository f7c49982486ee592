package resilientstore

import (
	"context"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
)

// Get implements buildstatus.Store. A pending build is read from memory.
func (s *Store) Get(ctx context.Context, buildID string) (*buildstatus.Build, error) {
	if b, err, ok := s.getPending(ctx, buildID); ok {
		return b, err
	}
	var b *buildstatus.Build
	err := s.call(ctx, func() (err error) { b, err = s.primary.Get(ctx, buildID); return err })
	return b, err
}

// getPending reads buildID from memory if it is pending (ok reports whether it was).
func (s *Store) getPending(ctx context.Context, buildID string) (b *buildstatus.Build, err error, ok bool) {
	if !s.fallback {
		return nil, nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pending[buildID]
	switch {
	case p == nil:
		return nil, nil, false
	case p.deleted:
		return nil, redstate.Errorf(redstate.ENOTFOUND, "build %s not found", buildID), true
	}
	b, err = s.mem.Get(ctx, buildID)
	return b, err, true
}

// GetMany implements buildstatus.Store. While Redis is unavailable it is served only when
// every id is pending; otherwise pending ids are overlaid on Redis's answer. Its timeouts do not
// count against the breaker (resilience.Breaker.DoHeavyRead), nor do those of List and
// ListProject.
func (s *Store) GetMany(ctx context.Context, ids []string) (map[string]*buildstatus.Build, error) {
	if s.fallback && len(ids) > 0 && s.allPending(ids) {
		return s.getManyPending(ctx, ids)
	}
	var out map[string]*buildstatus.Build
	err := s.br.DoHeavyRead(ctx, func() (err error) { out, err = s.primary.GetMany(ctx, ids); return err })
	if err != nil || !s.fallback {
		return out, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		if s.pending[id] == nil {
			continue
		}
		delete(out, id)
		if b, err := s.mem.Get(ctx, id); err == nil {
			out[id] = b
		}
	}
	return out, nil
}

func (s *Store) allPending(ids []string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		if s.pending[id] == nil {
			return false
		}
	}
	return true
}

func (s *Store) getManyPending(ctx context.Context, ids []string) (map[string]*buildstatus.Build, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out, err := s.mem.GetMany(ctx, ids)
	if err != nil {
		return nil, err
	}
	for id := range out {
		if p := s.pending[id]; p == nil || p.deleted {
			delete(out, id)
		}
	}
	return out, nil
}

// Exists implements buildstatus.Store.
func (s *Store) Exists(ctx context.Context, buildID string) (bool, error) {
	if _, err, ok := s.getPending(ctx, buildID); ok {
		if redstate.IsCode(err, redstate.ENOTFOUND) {
			return false, nil
		}
		return err == nil, err
	}
	var found bool
	err := s.call(ctx, func() (err error) { found, err = s.primary.Exists(ctx, buildID); return err })
	return found, err
}

// TTL implements buildstatus.Store. A pending build reports its memory TTL.
func (s *Store) TTL(ctx context.Context, buildID string) (time.Duration, error) {
	if _, err, ok := s.getPending(ctx, buildID); ok {
		if err != nil {
			return 0, err
		}
		return s.mem.TTL(ctx, buildID)
	}
	var d time.Duration
	err := s.call(ctx, func() (err error) { d, err = s.primary.TTL(ctx, buildID); return err })
	return d, err
}

// List implements buildstatus.Store. It needs Redis; pending builds in the page are replaced
// by their memory copy (or dropped if deleted).
func (s *Store) List(ctx context.Context, cursor string, limit int) (*buildstatus.Page, error) {
	var p *buildstatus.Page
	err := s.br.DoHeavyRead(ctx, func() (err error) { p, err = s.primary.List(ctx, cursor, limit); return err })
	if err != nil {
		return nil, err
	}
	return s.overlay(ctx, p), nil
}

// ListProject implements buildstatus.Store, like List.
func (s *Store) ListProject(ctx context.Context, projectID, cursor string, limit int) (*buildstatus.Page, error) {
	var p *buildstatus.Page
	err := s.br.DoHeavyRead(ctx, func() (err error) { p, err = s.primary.ListProject(ctx, projectID, cursor, limit); return err })
	if err != nil {
		return nil, err
	}
	return s.overlay(ctx, p), nil
}

// overlay replaces the pending builds of a page with their memory copy.
func (s *Store) overlay(ctx context.Context, p *buildstatus.Page) *buildstatus.Page {
	if !s.fallback || p == nil {
		return p
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) == 0 {
		return p
	}
	builds := p.Builds[:0:0]
	for _, b := range p.Builds {
		id, _, err := buildstatus.IdentityOf(b.JSON)
		if err != nil || s.pending[id] == nil {
			builds = append(builds, b)
			continue
		}
		if local, err := s.mem.Get(ctx, id); err == nil && !s.pending[id].deleted {
			builds = append(builds, local)
		}
	}
	return &buildstatus.Page{Builds: builds, Cursor: p.Cursor}
}
