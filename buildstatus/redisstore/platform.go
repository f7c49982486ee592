package redisstore

import (
	"context"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
)

// maxCASAttempts bounds the optimistic retries of UpdatePlatform and Delete.
const maxCASAttempts = 100

// UpdatePlatform implements buildstatus.Store as an optimistic compare-and-set loop: GET the
// build, apply buildstatus.ApplyPlatformResult in Go, and write it with saveScript
// conditioned on the ETag just read. When another writer got there first the script returns
// the new current value with its PRECONDITION result, so each retry costs one round trip;
// retries wait a jittered exponential backoff and give up with EUNAVAILABLE after
// maxCASAttempts. Concurrent updates of one build within this process take turns
// (updates.go), so the compare-and-set only meets other processes' writes.
// A caller-supplied ifMatch is never retried: a mismatch is EPRECONDITION.
//
// The merge is done in Go rather than in Lua because Redis's cjson re-encodes a document
// differently from buildstatus.Encode (it turns [] into {}, reorders fields and rewrites
// numbers), which would change the seed's stored bytes and every ETag.
//
// Round trips: 2 without contention (GET + EVALSHA), 3 on Cluster (plus the directory, once
// per call); 1 more per retry.
func (s *Store) UpdatePlatform(ctx context.Context, buildID string, result *buildstatus.PlatformResult, ifMatch string) (*buildstatus.Build, error) {
	if err := checkID(buildID); err != nil {
		return nil, err
	}
	if result == nil {
		return nil, redstate.Errorf(redstate.EINVALID, "a platform result is required")
	}
	if err := buildstatus.ValidatePlatformResult(result); err != nil {
		return nil, err
	}
	leave, err := s.updates.enter(ctx, buildID)
	if err != nil {
		return nil, err
	}
	defer leave()
	cur, err := s.getFresh(ctx, buildID)
	if err != nil {
		return nil, err
	}
	if ifMatch != "" && cur.ETag() != ifMatch {
		return nil, resultErr(resPrecondition, buildID)
	}
	curDoc, err := currentDoc(cur, buildID)
	if err != nil {
		return nil, err
	}
	if err := s.extendDirectory(ctx, curDoc.ProjectID, buildID); err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		next := buildstatus.ApplyPlatformResult(curDoc, result, s.now())
		next.BuildID = buildID
		if err := buildstatus.Validate(next); err != nil {
			return nil, err
		}
		b, res, current, err := s.write(ctx, next, cur.ETag(), false, ifMatch == "")
		if err != nil {
			return nil, err
		}
		if res != resPrecondition || ifMatch != "" {
			if err := resultErr(res, buildID); err != nil {
				return nil, err
			}
			return b, nil
		}
		if attempt >= maxCASAttempts {
			return nil, redstate.Errorf(redstate.ECONFLICT, "build %s: gave up after %d conflicting concurrent updates; retry", buildID, attempt)
		}
		cur = buildstatus.NewBuild(current)
		if curDoc, err = currentDoc(cur, buildID); err != nil {
			return nil, err
		}
		if err := sleep(ctx, backoff(attempt)); err != nil {
			return nil, err
		}
	}
}

// backoff returns the wait before CAS retry number attempt (1-based): uniform in
// [0, min(100µs·2^attempt, 100ms)), binary exponential backoff, which spreads many
// contending writers out quickly so each gets its turn.
func backoff(attempt int) time.Duration {
	limit := 100 * time.Millisecond
	if attempt < 10 {
		limit = min(limit, 100*time.Microsecond<<attempt)
	}
	return jitter(limit)
}

// currentDoc decodes the document of a build read for an update; a value that is not a
// document is EINTERNAL.
func currentDoc(b *buildstatus.Build, buildID string) (*buildstatus.PublishResponse, error) {
	doc, err := b.Doc()
	if err != nil {
		return nil, redstate.Wrap(redstate.EINTERNAL, err, "the stored value of build "+buildID+" is not a valid document")
	}
	return doc, nil
}
