package resilientstore

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
)

// Every write accepted by the fallback is applied to the memory store and marked pending under
// s.mu (markLocked, which also appends it to the journal, if any); the journal's fsync
// (durable) runs after s.mu is released, and the caller gets success only after it.

// Save implements buildstatus.Store (see the package comment for the fallback rules).
func (s *Store) Save(ctx context.Context, doc *buildstatus.PublishResponse, opts buildstatus.SaveOptions) (*buildstatus.Build, error) {
	if s.fallback && doc != nil {
		s.mu.Lock()
		if s.pendingLocked(doc.BuildID) != nil {
			b, err := s.mem.Save(ctx, doc, opts)
			var seq uint64
			if err == nil {
				seq, err = s.markLocked(ctx, doc.BuildID, false)
			}
			s.mu.Unlock()
			return s.acked(b, err, seq)
		}
		s.mu.Unlock()
	}
	var b *buildstatus.Build
	err := s.call(ctx, func() (err error) { b, err = s.primary.Save(ctx, doc, opts); return err })
	if err == nil || !s.fallback || !isUnavailable(err) || callerCanceled(ctx) {
		return b, err // a caller that gave up did not meet an outage (nor does the breaker count it)
	}
	if opts.IfMatch != "" || opts.IfNoneMatch {
		return nil, notWritable(err, "a conditional save")
	}
	s.mu.Lock()
	b, merr := s.mem.Save(ctx, doc, opts)
	if merr != nil {
		s.mu.Unlock()
		return nil, merr
	}
	seq, jerr := s.markLocked(ctx, doc.BuildID, false)
	s.mu.Unlock()
	s.degraded(ctx, buildstatus.OpSave, doc.BuildID, err)
	return s.acked(b, jerr, seq)
}

// acked returns b once the journal record seq is durable, or err.
func (s *Store) acked(b *buildstatus.Build, err error, seq uint64) (*buildstatus.Build, error) {
	if err == nil {
		err = s.durable(seq)
	}
	if err != nil {
		return nil, err
	}
	return b, nil
}

// UpdatePlatform implements buildstatus.Store. In fallback mode only a pending build can be
// updated (its current value is in memory); any other needs Redis.
func (s *Store) UpdatePlatform(ctx context.Context, buildID string, result *buildstatus.PlatformResult, ifMatch string) (*buildstatus.Build, error) {
	if s.fallback {
		s.mu.Lock()
		if p := s.pendingLocked(buildID); p != nil {
			b, err := s.mem.UpdatePlatform(ctx, buildID, result, ifMatch)
			var seq uint64
			if err == nil {
				seq, err = s.markLocked(ctx, buildID, false)
			}
			s.mu.Unlock()
			return s.acked(b, err, seq)
		}
		s.mu.Unlock()
	}
	var b *buildstatus.Build
	err := s.call(ctx, func() (err error) { b, err = s.primary.UpdatePlatform(ctx, buildID, result, ifMatch); return err })
	if err != nil && s.fallback && isUnavailable(err) {
		return nil, notWritable(err, "updating a platform of a build not written during the outage")
	}
	return b, err
}

// Delete implements buildstatus.Store. In fallback mode an unconditional delete of a build that
// is not pending is recorded as a tombstone and succeeds even if the build does not exist.
func (s *Store) Delete(ctx context.Context, buildID, ifMatch string) error {
	if s.fallback {
		s.mu.Lock()
		if p := s.pendingLocked(buildID); p != nil {
			seq, err := s.deletePendingLocked(ctx, p, buildID, ifMatch, false)
			s.mu.Unlock()
			_, err = s.acked(nil, err, seq)
			return err
		}
		s.mu.Unlock()
	}
	err := s.call(ctx, func() error { return s.primary.Delete(ctx, buildID, ifMatch) })
	if err == nil || !s.fallback || !isUnavailable(err) || callerCanceled(ctx) {
		return err
	}
	if ifMatch != "" {
		return notWritable(err, "a conditional delete")
	}
	// Only a canonical id may become a tombstone (the primary would reject any other at
	// write-back, leaving it pending forever); the primary may not have checked it (breaker open).
	if norm, verr := buildstatus.NormalizeBuildID(buildID); verr != nil {
		return verr
	} else if norm != buildID {
		return redstate.Errorf(redstate.EINVALID, "buildId %q is not canonical (want %q)", buildID, norm)
	}
	s.mu.Lock()
	var seq uint64
	var jerr error
	if p := s.pending[buildID]; p != nil { // became pending while we called Redis
		seq, jerr = s.deletePendingLocked(ctx, p, buildID, "", true)
	} else {
		seq, jerr = s.markLocked(ctx, buildID, true)
	}
	s.mu.Unlock()
	if jerr == nil {
		s.degraded(ctx, buildstatus.OpDelete, buildID, err)
	}
	_, jerr = s.acked(nil, jerr, seq)
	return jerr
}

// deletePendingLocked deletes pending build p from memory and records the tombstone; a memory
// copy that is already gone is an ENOTFOUND unless ignoreMissing. Callers hold s.mu.
func (s *Store) deletePendingLocked(ctx context.Context, p *pendingWrite, buildID, ifMatch string, ignoreMissing bool) (uint64, error) {
	if p.deleted {
		return 0, redstate.Errorf(redstate.ENOTFOUND, "build %s not found", buildID)
	}
	if err := s.mem.Delete(ctx, buildID, ifMatch); err != nil && !(ignoreMissing && redstate.IsCode(err, redstate.ENOTFOUND)) {
		return 0, err
	}
	return s.markLocked(ctx, buildID, true)
}

// degradedReminder is how often a continuing run of fallback writes is logged again.
const degradedReminder = time.Minute

// degraded logs writes accepted by the memory fallback: the first of an outage, then at most
// once per degradedReminder with the count since (the breaker logs its own transitions, and the
// write-back logs what it wrote), not one line per write.
func (s *Store) degraded(ctx context.Context, op, buildID string, cause error) {
	s.degradedMu.Lock()
	now := time.Now()
	s.degradedWrites++
	if !s.degradedLogged.IsZero() && now.Sub(s.degradedLogged) < degradedReminder {
		s.degradedMu.Unlock()
		return
	}
	n := s.degradedWrites
	s.degradedLogged, s.degradedWrites = now, 0
	s.degradedMu.Unlock()
	s.log.WarnContext(ctx, "redis unavailable; writes kept in memory fallback until written back",
		slog.String("operation", op), slog.String("buildId", buildID), slog.Int("writes", n), slog.Any("err", cause))
}

// recovered ends a run of fallback writes, so the next outage logs its first write again.
func (s *Store) recovered() {
	s.degradedMu.Lock()
	s.degradedLogged, s.degradedWrites = time.Time{}, 0
	s.degradedMu.Unlock()
}

// callerCanceled reports whether the caller canceled ctx: its call failing is then no sign of
// an outage (the breaker does not count it either), so it is not taken by the fallback.
func callerCanceled(ctx context.Context) bool { return errors.Is(ctx.Err(), context.Canceled) }
