package redisstore

import (
	"context"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/internal/resend"
)

// Delete implements buildstatus.Store. Lua cannot build the index key, so Delete first GETs
// the build to learn its project and ETag, then runs deleteScript conditioned on that ETag:
// build, index entry and event go together or not at all. If a concurrent write changed the
// build in between, Delete retries (bounded); with a caller ifMatch it reports EPRECONDITION.
//
// The GET never comes from the client-side cache (Options.Cache). Round trips: 2 (GET +
// EVALSHA).
func (s *Store) Delete(ctx context.Context, buildID, ifMatch string) error {
	if err := checkID(buildID); err != nil {
		return err
	}
	for attempt := 1; ; attempt++ {
		cur, err := s.getFresh(ctx, buildID)
		if err != nil {
			return err
		}
		if ifMatch != "" && cur.ETag() != ifMatch {
			return resultErr(resPrecondition, buildID)
		}
		_, projectID, err := buildstatus.IdentityOf(cur.JSON)
		if err != nil {
			return redstate.Wrap(redstate.EINTERNAL, err, "the stored value of build "+buildID+" is not a valid document")
		}
		s.wrote(s.keys.Build(buildID))
		m := resend.NewMarker(s.keys.CallMarkers(), s.keys.Build(buildID), s.window)
		reply, err := deleteScript.Run(ctx, s.client,
			m.Keys(s.keys.Build(buildID), s.indexKey(projectID, buildID)),
			m.Args(cur.ETag(), buildID, s.keys.Events(buildID))...,
		).Slice()
		s.wrote(s.keys.Build(buildID))
		if err != nil {
			return mapErr(err, "deleting build "+buildID)
		}
		res, _, err := parseResult(reply)
		if err != nil {
			return err
		}
		if res != resPrecondition || ifMatch != "" {
			return resultErr(res, buildID)
		}
		if attempt >= maxCASAttempts {
			return redstate.Errorf(redstate.EUNAVAILABLE, "build %s: gave up deleting after %d concurrent updates; retry", buildID, attempt)
		}
		if err := sleep(ctx, backoff(attempt)); err != nil {
			return err
		}
	}
}
