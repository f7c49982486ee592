package memstore

import (
	"context"
	"encoding/base64"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
)

// listOrder holds every entry in creation order (ascending seq) for List. Removed entries stay
// as tombstones until they outnumber the live ones, then the slice is compacted; cursors name a
// sequence number, not a position, so compaction never moves a walk.
type listOrder struct {
	entries []*entry
	dead    int
}

func (o *listOrder) add(e *entry) { o.entries = append(o.entries, e) }

// dropped records that one entry was removed, compacting when tombstones dominate.
func (o *listOrder) dropped() {
	o.dead++
	if o.dead > 64 {
		o.compact()
	}
}

// compact drops the tombstones if they make up at least half of the slice, so the cost is
// amortized over the removals that made them.
func (o *listOrder) compact() {
	if o.dead == 0 || o.dead*2 < len(o.entries) {
		return
	}
	o.entries = slices.DeleteFunc(o.entries, func(e *entry) bool { return e.removed })
	o.dead = 0
}

// listCursorPrefix marks the cursors List returns, so that a project cursor or garbage is
// rejected rather than misread.
const listCursorPrefix = "mem1:"

// List implements buildstatus.Store. It walks builds in creation order, so a build present for
// the whole walk appears exactly once.
func (s *Store) List(_ context.Context, cursor string, limit int) (*buildstatus.Page, error) {
	limit, err := buildstatus.ValidateLimit(limit)
	if err != nil {
		return nil, err
	}
	after, err := decodeListCursor(cursor)
	if err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	now := s.now()
	all := s.order.entries
	i := sort.Search(len(all), func(i int) bool { return all[i].seq > after })
	page := &buildstatus.Page{Builds: []*buildstatus.Build{}}
	for ; i < len(all) && len(page.Builds) < limit; i++ {
		e := all[i]
		if e.removed || !now.Before(e.expireAt) {
			continue
		}
		b, err := e.build()
		if err != nil {
			return nil, err
		}
		page.Builds = append(page.Builds, b)
	}
	if i < len(all) {
		page.Cursor = base64.RawURLEncoding.EncodeToString([]byte(listCursorPrefix + strconv.FormatUint(all[i-1].seq, 10)))
	}
	return page, nil
}

func decodeListCursor(cursor string) (uint64, error) {
	if cursor == "" {
		return 0, nil
	}
	invalid := redstate.Errorf(redstate.EINVALID, "cursor %q is not a cursor this listing returned", cursor)
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return 0, invalid
	}
	text, ok := strings.CutPrefix(string(raw), listCursorPrefix)
	if !ok {
		return 0, invalid
	}
	seq, err := strconv.ParseUint(text, 10, 64)
	if err != nil {
		return 0, invalid
	}
	return seq, nil
}

// projectIdx is one project's entries in listing order: score descending, then build id
// descending.
type projectIdx struct {
	entries []*entry
}

// before reports whether a comes before b in listing order.
func before(a, b *entry) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	return a.id > b.id
}

// position returns where e belongs in p (the index of e itself when present).
func (p *projectIdx) position(e *entry) int {
	return sort.Search(len(p.entries), func(i int) bool { return !before(p.entries[i], e) })
}

// projectAdd indexes e under its project with its current score. Callers hold s.mu for writing.
func (s *Store) projectAdd(e *entry) {
	p := s.projects[e.project]
	if p == nil {
		p = &projectIdx{}
		s.projects[e.project] = p
	}
	p.entries = slices.Insert(p.entries, p.position(e), e)
}

// projectRemove drops e from its project's index. Callers hold s.mu for writing and must not
// have changed e.score since projectAdd.
func (s *Store) projectRemove(e *entry) {
	p := s.projects[e.project]
	if p == nil {
		return
	}
	if i := p.position(e); i < len(p.entries) && p.entries[i] == e {
		p.entries = slices.Delete(p.entries, i, i+1)
	}
	if len(p.entries) == 0 {
		delete(s.projects, e.project)
	}
}

// ListProject implements buildstatus.Store.
func (s *Store) ListProject(_ context.Context, projectID, cursor string, limit int) (*buildstatus.Page, error) {
	if err := buildstatus.ValidateProjectID(projectID); err != nil {
		return nil, err
	}
	limit, err := buildstatus.ValidateLimit(limit)
	if err != nil {
		return nil, err
	}
	after, resume, err := buildstatus.DecodeProjectCursor(cursor)
	if err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	now := s.now()
	page := &buildstatus.Page{Builds: []*buildstatus.Build{}}
	p := s.projects[projectID]
	if p == nil {
		return page, nil
	}
	i := 0
	if resume {
		i = sort.Search(len(p.entries), func(i int) bool { return after.Before(p.entries[i].score, p.entries[i].id) })
	}
	var last *entry
	for ; i < len(p.entries) && len(page.Builds) < limit; i++ {
		e := p.entries[i]
		if !now.Before(e.expireAt) {
			continue
		}
		b, err := e.build()
		if err != nil {
			return nil, err
		}
		page.Builds = append(page.Builds, b)
		last = e
	}
	if last != nil && i < len(p.entries) {
		page.Cursor = buildstatus.ProjectCursor{Score: last.score, BuildID: last.id}.Encode()
	}
	return page, nil
}
