package resilientstore

import (
	"context"
	"log/slog"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
)

// Save implements buildstatus.Store (see the package comment for the fallback rules).
func (s *Store) Save(ctx context.Context, doc *buildstatus.PublishResponse, opts buildstatus.SaveOptions) (*buildstatus.Build, error) {
	if s.fallback && doc != nil {
		s.mu.Lock()
		if s.pendingLocked(doc.BuildID) != nil {
			defer s.mu.Unlock()
			b, err := s.mem.Save(ctx, doc, opts)
			if err == nil {
				s.markLocked(doc.BuildID, false)
			}
			return b, err
		}
		s.mu.Unlock()
	}
	var b *buildstatus.Build
	err := s.call(ctx, func() (err error) { b, err = s.primary.Save(ctx, doc, opts); return err })
	if err == nil || !s.fallback || !isUnavailable(err) {
		return b, err
	}
	if opts.IfMatch != "" || opts.IfNoneMatch {
		return nil, notWritable(err, "a conditional save")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b, merr := s.mem.Save(ctx, doc, opts)
	if merr != nil {
		return nil, merr
	}
	s.markLocked(doc.BuildID, false)
	s.degraded(ctx, buildstatus.OpSave, doc.BuildID, err)
	return b, nil
}

// UpdatePlatform implements buildstatus.Store. In fallback mode only a pending build can be
// updated (its current value is in memory); any other needs Redis.
func (s *Store) UpdatePlatform(ctx context.Context, buildID string, result *buildstatus.PlatformResult, ifMatch string) (*buildstatus.Build, error) {
	if s.fallback {
		s.mu.Lock()
		if p := s.pendingLocked(buildID); p != nil {
			defer s.mu.Unlock()
			b, err := s.mem.UpdatePlatform(ctx, buildID, result, ifMatch)
			if err == nil {
				s.markLocked(buildID, false)
			}
			return b, err
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
			defer s.mu.Unlock()
			if p.deleted {
				return redstate.Errorf(redstate.ENOTFOUND, "build %s not found", buildID)
			}
			if err := s.mem.Delete(ctx, buildID, ifMatch); err != nil {
				return err
			}
			s.markLocked(buildID, true)
			return nil
		}
		s.mu.Unlock()
	}
	err := s.call(ctx, func() error { return s.primary.Delete(ctx, buildID, ifMatch) })
	if err == nil || !s.fallback || !isUnavailable(err) {
		return err
	}
	if ifMatch != "" {
		return notWritable(err, "a conditional delete")
	}
	if _, verr := buildstatus.NormalizeBuildID(buildID); verr != nil {
		return verr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.pending[buildID]; p != nil { // became pending while we called Redis
		if p.deleted {
			return redstate.Errorf(redstate.ENOTFOUND, "build %s not found", buildID)
		}
		if merr := s.mem.Delete(ctx, buildID, ""); merr != nil && !redstate.IsCode(merr, redstate.ENOTFOUND) {
			return merr
		}
	}
	s.markLocked(buildID, true)
	s.degraded(ctx, buildstatus.OpDelete, buildID, err)
	return nil
}

// degraded logs a write accepted by the memory fallback.
func (s *Store) degraded(ctx context.Context, op, buildID string, cause error) {
	s.log.WarnContext(ctx, "redis unavailable; write kept in memory fallback until written back",
		slog.String("operation", op), slog.String("buildId", buildID), slog.Any("err", cause))
}
