package resilientstore

import (
	"context"
	"log/slog"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/metrics"
)

// outcome of one pending id's write-back.
type outcome int

const (
	outcomeNone       outcome = iota // nothing to do (no longer pending, or expired in memory)
	outcomeWritten                   // Redis now holds the pending write
	outcomeSuperseded                // Redis held a newer value; the pending write was dropped
	outcomeRetry                     // failed; stays pending for the next round
	outcomeRejected                  // Redis rejected it permanently; dropped
)

func (s *Store) writeBackLoop() {
	defer close(s.stopped)
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			if s.Pending() > 0 && s.br.Allow() {
				s.writeBackRound()
			}
		}
	}
}

// writeBackRound tries every pending id once, stopping early if Redis becomes unavailable or
// the store is closed.
func (s *Store) writeBackRound() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	s.writeBackRoundCtx(ctx)
}

// writeBackRoundCtx is writeBackRound bounded by ctx.
func (s *Store) writeBackRoundCtx(ctx context.Context) {
	s.roundMu.Lock()
	defer s.roundMu.Unlock()
	defer s.maybeCompact()

	s.mu.Lock()
	ids := make([]string, 0, len(s.pending))
	for id := range s.pending {
		ids = append(ids, id)
	}
	s.mu.Unlock()

	var written, superseded, failed int
	for _, id := range ids {
		res, err := s.writeBackOne(ctx, id)
		switch res {
		case outcomeWritten:
			written++
		case outcomeSuperseded:
			superseded++
		case outcomeRetry, outcomeRejected:
			failed++
		}
		if res == outcomeRejected {
			s.log.Error("fallback write-back rejected by redis; pending write dropped",
				slog.String("buildId", id), slog.Any("err", err))
		}
		if res == outcomeRetry && isUnavailable(err) {
			break // Redis is gone again (or the breaker opened): retry next round
		}
	}
	s.m.AddWriteBack(buildstatus.Block, metrics.WriteBackWritten, written)
	s.m.AddWriteBack(buildstatus.Block, metrics.WriteBackSuperseded, superseded)
	s.m.AddWriteBack(buildstatus.Block, metrics.WriteBackFailed, failed)
	pending := s.Pending()
	if pending == 0 {
		s.recovered()
	}
	if written+superseded+failed > 0 {
		s.log.Info("fallback write-back", slog.Int("written", written), slog.Int("superseded", superseded),
			slog.Int("failed", failed), slog.Int("pending", pending))
	}
}

// writeBackOne resolves one pending id against Redis by newer-wins.
func (s *Store) writeBackOne(ctx context.Context, id string) (outcome, error) {
	s.mu.Lock()
	p := s.pending[id]
	if p == nil {
		s.mu.Unlock()
		return outcomeNone, nil
	}
	snap := *p
	var local *buildstatus.Build
	if !snap.deleted {
		var err error
		if local, err = s.mem.Get(ctx, id); err != nil {
			// Expired in memory (its TTL ran out during the outage): nothing left to write.
			s.dropLocked(id, snap.gen, false)
			s.mu.Unlock()
			return outcomeNone, nil
		}
	}
	s.mu.Unlock()

	var cur *buildstatus.Build
	err := s.call(ctx, func() (err error) {
		cur, err = s.primary.Get(ctx, id)
		if redstate.IsCode(err, redstate.ENOTFOUND) {
			cur, err = nil, nil
		}
		return err
	})
	if err != nil {
		return outcomeRetry, err
	}

	res, err := s.apply(ctx, id, snap, local, cur)
	if res == outcomeWritten || res == outcomeSuperseded || res == outcomeRejected {
		s.mu.Lock()
		s.dropLocked(id, snap.gen, !snap.deleted)
		s.mu.Unlock()
	}
	return res, err
}

// apply writes the pending state to Redis unless Redis's value (cur, nil if none) is newer.
func (s *Store) apply(ctx context.Context, id string, p pendingWrite, local, cur *buildstatus.Build) (outcome, error) {
	if p.deleted {
		if cur == nil {
			return outcomeWritten, nil
		}
		if primaryWins(updatedAtOf(cur), &buildstatus.DateTime{Time: p.deletedAt}) {
			return outcomeSuperseded, nil
		}
		err := s.call(ctx, func() error { return s.primary.Delete(ctx, id, cur.ETag()) })
		if redstate.IsCode(err, redstate.ENOTFOUND) { // deleted meanwhile: the tombstone's goal
			return outcomeWritten, nil
		}
		return classify(err)
	}
	if cur != nil && cur.ETag() == local.ETag() {
		return outcomeWritten, nil
	}
	localDoc, err := local.Doc()
	if err != nil {
		return outcomeRejected, err
	}
	opts := buildstatus.SaveOptions{IfNoneMatch: true}
	if cur != nil {
		if primaryWins(updatedAtOf(cur), localDoc.UpdatedAt) {
			return outcomeSuperseded, nil
		}
		opts = buildstatus.SaveOptions{IfMatch: cur.ETag()}
	}
	err = s.call(ctx, func() error { _, err := s.primary.Save(ctx, localDoc, opts); return err })
	return classify(err)
}

// updatedAtOf returns a stored build's updatedAt; nil when it has none or cannot be decoded (a
// foreign value then never wins over a fallback write).
func updatedAtOf(b *buildstatus.Build) *buildstatus.DateTime {
	doc, err := b.Doc()
	if err != nil {
		return nil
	}
	return doc.UpdatedAt
}

// classify maps a write-back write's error to its outcome.
func classify(err error) (outcome, error) {
	switch redstate.ErrorCode(err) {
	case "":
		return outcomeWritten, nil
	case redstate.ECONFLICT, redstate.EINVALID:
		return outcomeRejected, err
	default: // EPRECONDITION or ENOTFOUND (changed meanwhile), EUNAVAILABLE, EINTERNAL: next round
		return outcomeRetry, err
	}
}

// primaryWins reports whether Redis's value must be kept over the pending one: its updatedAt is
// strictly later. A null updatedAt loses to a non-null one; two nulls keep the pending value.
func primaryWins(primary, pending *buildstatus.DateTime) bool {
	if primary == nil {
		return false
	}
	if pending == nil {
		return true
	}
	return primary.Time.After(pending.Time)
}

// dropLocked forgets id's pending write if no local write happened since generation gen, and
// removes its memory copy when dropValue. Callers hold s.mu.
func (s *Store) dropLocked(id string, gen uint64, dropValue bool) {
	p := s.pending[id]
	if p == nil || p.gen != gen {
		return // written again meanwhile: the next round writes the newer value
	}
	delete(s.pending, id)
	if dropValue {
		_ = s.mem.Delete(context.Background(), id, "")
	}
	s.m.SetPending(buildstatus.Block, len(s.pending))
	s.journalDroppedLocked(id)
}
