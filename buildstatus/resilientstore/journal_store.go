package resilientstore

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
)

// openJournal opens the journal at path and replays it into the memory store and the pending
// set: the last record of each id wins; records whose memory copy had expired are skipped. The
// journal is then compacted to the recovered state.
func (s *Store) openJournal(path string) error {
	j, recs, torn, err := openJournal(path)
	if err != nil {
		return fmt.Errorf("resilientstore: opening the fallback journal %s: %w", path, err)
	}
	if torn > 0 {
		s.log.Warn("fallback journal ended in a torn or corrupt record (a crash during an append); it was ignored and truncated",
			slog.String("journal", path), slog.Int64("bytes_dropped", torn), slog.Int("records_kept", len(recs)))
	}
	last := make(map[string]journalRecord, len(recs))
	var order []string
	for _, rec := range recs {
		if _, seen := last[rec.ID]; !seen {
			order = append(order, rec.ID)
		}
		last[rec.ID] = rec
	}

	ctx := context.Background()
	now := s.now()
	var expired, invalid int
	s.mu.Lock()
	for _, id := range order {
		rec := last[id]
		switch rec.Op {
		case opClear: // written back before the crash
		case opDelete:
			if err := s.mem.Delete(ctx, id, ""); err != nil && !redstate.IsCode(err, redstate.ENOTFOUND) {
				invalid++
				s.log.Error("fallback journal: tombstone cannot be replayed; dropped", slog.String("buildId", id), slog.Any("err", err))
				continue
			}
			s.gen++
			s.pending[id] = &pendingWrite{deleted: true, deletedAt: rec.DeletedAt, gen: s.gen}
		case opSave:
			if !rec.ExpiresAt.IsZero() && !now.Before(rec.ExpiresAt) {
				expired++ // its TTL ran out: nothing left to write back
				continue
			}
			doc, err := buildstatus.NewBuild(rec.Doc).Doc()
			if err == nil {
				_, err = s.mem.Save(ctx, doc, buildstatus.SaveOptions{})
			}
			if err != nil {
				invalid++
				s.log.Error("fallback journal: build cannot be replayed; dropped", slog.String("buildId", id), slog.Any("err", err))
				continue
			}
			s.gen++
			s.pending[id] = &pendingWrite{gen: s.gen}
		}
	}
	s.j = j
	n := len(s.pending)
	s.m.SetPending(buildstatus.Block, n)
	if len(recs) > n {
		s.compactLocked(ctx)
	}
	s.mu.Unlock()

	s.log.Info("fallback journal opened; recovered pending writes are written back once Redis is reachable",
		slog.String("journal", path), slog.Int("recovered", n), slog.Int("records", len(recs)),
		slog.Int("expired", expired), slog.Int("invalid", invalid))
	return nil
}

// recordLocked returns the journal record of id's pending write p; ok is false if a saved
// build is no longer in memory. Callers hold s.mu.
func (s *Store) recordLocked(ctx context.Context, id string, p *pendingWrite) (rec journalRecord, ok bool) {
	if p.deleted {
		return journalRecord{Op: opDelete, ID: id, DeletedAt: p.deletedAt, Gen: p.gen}, true
	}
	b, err := s.mem.Get(ctx, id)
	if err != nil {
		return journalRecord{}, false
	}
	rec = journalRecord{Op: opSave, ID: id, Doc: b.JSON, Gen: p.gen}
	if ttl, err := s.mem.TTL(ctx, id); err == nil {
		rec.ExpiresAt = s.now().Add(ttl).UTC()
	}
	return rec, true
}

// journalDroppedLocked records that id is no longer pending: the journal is emptied when
// nothing is pending, else a clear record is appended (durable with the next fsync). Callers
// hold s.mu.
func (s *Store) journalDroppedLocked(id string) {
	if s.j == nil {
		return
	}
	if len(s.pending) > 0 {
		if _, err := s.j.append(journalRecord{Op: opClear, ID: id}); err != nil {
			s.log.Debug("fallback journal: clear record not written", slog.String("buildId", id), slog.Any("err", err))
		}
		return
	}
	if err := s.j.reset(); err != nil {
		s.log.Warn("fallback journal could not be truncated after write-back; it is replayed (harmlessly) on the next start",
			slog.String("journal", s.j.path), slog.Any("err", err))
	}
}

// maybeCompact rewrites the journal when it holds many superseded records.
func (s *Store) maybeCompact() {
	if s.j == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) > 0 && s.j.needsCompaction(len(s.pending)) {
		s.compactLocked(context.Background())
	}
}

// compactLocked rewrites the journal as one record per pending id. Callers hold s.mu.
func (s *Store) compactLocked(ctx context.Context) {
	if len(s.pending) == 0 {
		if err := s.j.reset(); err != nil {
			s.log.Warn("fallback journal could not be truncated", slog.String("journal", s.j.path), slog.Any("err", err))
		}
		return
	}
	recs := make([]journalRecord, 0, len(s.pending))
	for id, p := range s.pending {
		if rec, ok := s.recordLocked(ctx, id, p); ok {
			recs = append(recs, rec)
		}
	}
	start := time.Now()
	if err := s.j.rewrite(recs); err != nil {
		s.log.Warn("fallback journal could not be compacted; it keeps growing until everything is written back",
			slog.String("journal", s.j.path), slog.Any("err", err))
		return
	}
	s.log.Debug("fallback journal compacted", slog.String("journal", s.j.path), slog.Int("records", len(recs)),
		slog.Duration("took", time.Since(start)))
}
