package redisstore

import (
	"context"
	"strconv"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/internal/resend"
)

// directorySlack is added to the TTL of a project's shard directory on Cluster. The
// directory is extended before the save script extends the build, so without slack it could
// expire a moment before the newest build it must list.
const directorySlack = time.Minute

// directoryReuse is how long a process trusts its own last extension of a (project, slot)
// directory entry and skips the extra round trip. It is well below directorySlack, so the
// directory still outlives every build saved meanwhile by at least directorySlack -
// directoryReuse.
const directoryReuse = directorySlack / 2

// Save implements buildstatus.Store. On standalone and Sentinel it is one EVALSHA (saveScript,
// shared with the saves running concurrently, see batch.go); on Cluster one more round trip
// first extends the project's shard directory.
// doc itself is not modified; the returned Build.Doc is a shallow copy with a canonical id.
func (s *Store) Save(ctx context.Context, doc *buildstatus.PublishResponse, opts buildstatus.SaveOptions) (*buildstatus.Build, error) {
	if doc == nil {
		return nil, buildstatus.Validate(nil)
	}
	if err := checkID(doc.BuildID); err != nil {
		return nil, err
	}
	d := *doc
	if err := buildstatus.Validate(&d); err != nil {
		return nil, err
	}
	if err := s.extendDirectory(ctx, d.ProjectID, d.BuildID); err != nil {
		return nil, err
	}
	b, res, _, err := s.write(ctx, &d, opts.IfMatch, opts.IfNoneMatch, false)
	if err != nil {
		return nil, err
	}
	if err := resultErr(res, d.BuildID); err != nil {
		return nil, err
	}
	return b, nil
}

// extendDirectory records, on Cluster only, the slot of buildID's key in the project's shard
// directory (directoryScript). It must precede the save script, keeping the directory a
// superset of the shards in use. A process that extended the same entry less than
// directoryReuse ago skips the round trip (the directory cannot have expired since: only a
// manual DEL or FLUSH removes it earlier). The memo holds one entry per (project, slot) seen.
func (s *Store) extendDirectory(ctx context.Context, projectID, buildID string) error {
	if s.cluster == nil {
		return nil
	}
	slot := s.keys.SlotOfBuild(buildID)
	entry := projectID + "\x00" + slot
	now := time.Now()
	if last, ok := s.directories.Load(entry); ok && now.Sub(last.(time.Time)) < directoryReuse {
		return nil
	}
	ms := strconv.FormatInt((s.ttl + directorySlack).Milliseconds(), 10)
	if err := directoryScript.Run(ctx, s.client, []string{s.keys.ProjectShards(projectID)}, slot, ms).Err(); err != nil {
		return mapErr(err, "saving build "+buildID)
	}
	s.directories.Store(entry, now)
	return nil
}

// write encodes a validated doc and runs saveScript (the caller has run extendDirectory). res is the script's result code; cur
// is the current stored value when res is resPrecondition and wantCurrent is set.
func (s *Store) write(ctx context.Context, doc *buildstatus.PublishResponse, ifMatch string, ifNoneMatch, wantCurrent bool) (b *buildstatus.Build, res string, cur []byte, err error) {
	encoded, err := buildstatus.Encode(doc)
	if err != nil {
		if redstate.IsCode(err, redstate.ETOOLARGE) {
			return nil, "", nil, err
		}
		return nil, "", nil, redstate.Wrap(redstate.EINTERNAL, err, "encoding build "+doc.BuildID)
	}
	id := doc.BuildID
	buildKey := s.keys.Build(id)
	reply, err := s.runSave(ctx, saveReq{
		buildKey:    buildKey,
		indexKey:    s.indexKey(doc.ProjectID, id),
		conditional: ifMatch != "" || ifNoneMatch,
		args: []any{
			encoded,
			ifMatch,
			flag(ifNoneMatch),
			doc.ProjectID,
			encoded[:projectPrefixLen(encoded)],
			buildstatus.ProjectScore(doc, s.now()),
			id,
			s.keys.Events(id),
			flag(wantCurrent),
		},
	})
	if err != nil {
		return nil, "", nil, err
	}
	if reply.code != resOK {
		return nil, reply.code, reply.cur, nil
	}
	res = reply.code
	return buildstatus.NewDecodedBuild(doc, encoded), res, nil, nil
}

// markerKey returns the marker of a saveScript call whose saves' keys are in buildKey's slot: a
// fresh one (resend.MarkerKey) for a call with a conditional save, which sets it; for a call of
// unconditional saves, which never reads or writes it, a fixed key of the same slot, so that no
// token is drawn on that path.
func (s *Store) markerKey(buildKey string, conditional bool) string {
	if conditional {
		return resend.MarkerKey(s.keys.CallMarkers(), buildKey, resend.Token())
	}
	return resend.MarkerKey(s.keys.CallMarkers(), buildKey, "unconditional")
}

// parseResult reads a script's {code [, value]} reply.
func parseResult(reply []any) (code string, value []byte, err error) {
	if len(reply) == 0 {
		return "", nil, redstate.Errorf(redstate.EINTERNAL, "redisstore: empty script reply")
	}
	code, _ = reply[0].(string)
	if len(reply) > 1 {
		if v, ok := reply[1].(string); ok {
			value = []byte(v)
		}
	}
	return code, value, nil
}

// resultErr maps a script result code to the Store contract's error.
func resultErr(res, id string) error {
	switch res {
	case resOK:
		return nil
	case resNotFound:
		return redstate.Errorf(redstate.ENOTFOUND, "build %s does not exist", id)
	case resPrecondition:
		return redstate.Errorf(redstate.EPRECONDITION, "build %s does not have the expected ETag", id)
	case resExists:
		return redstate.Errorf(redstate.EPRECONDITION, "build %s already exists", id)
	case resConflict:
		return redstate.Errorf(redstate.ECONFLICT, "build %s belongs to another project; a build's projectId never changes", id)
	}
	return redstate.Errorf(redstate.EINTERNAL, "redisstore: unexpected script result %q for build %s", res, id)
}

// projectPrefixLen returns n such that encoded[:n] is exactly `{"buildId":"…","projectId":"…",`
// (Encode's field order), or 0 if encoded does not start that way. saveScript compares that
// prefix with the stored value to confirm the project without decoding JSON.
func projectPrefixLen(encoded []byte) int {
	const head = `{"buildId":"`
	const mid = `","projectId":"`
	i := len(head) + 36
	if len(encoded) < i+len(mid) || string(encoded[:len(head)]) != head || string(encoded[i:i+len(mid)]) != mid {
		return 0
	}
	for j := i + len(mid); j < len(encoded); j++ {
		switch encoded[j] {
		case '\\':
			j++
		case '"':
			if j+1 < len(encoded) && encoded[j+1] == ',' {
				return j + 2
			}
			return 0
		}
	}
	return 0
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
