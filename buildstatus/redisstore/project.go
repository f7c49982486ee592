package redisstore

import (
	"context"
	"slices"
	"strconv"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/internal/keyspace"
	"github.com/redstate/redstate/internal/redisscript"
)

// entry is one project-index member.
type entry struct {
	id    string
	score int64
	shard int
}

// ahead reports whether a is listed before b (score descending, then id descending).
func (a entry) ahead(b entry) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	return a.id > b.id
}

// shard is the listing state of one index key (the whole index on standalone, one slot's
// shard on Cluster).
type shard struct {
	idx   int // position in the shard list
	key   string
	after buildstatus.ProjectCursor // resume strictly after this entry
	from  bool                      // after is set
	buf   []entry                   // read but not yet merged
	done  bool                      // nothing left after the buffer
	stale []entry                   // members whose build is gone or moved project
}

// ListProject implements buildstatus.Store. It reads the next entries after the cursor from
// the index (pageScript; on Cluster one call per shard listed in the directory, pipelined),
// merges them in listing order, fetches the candidate builds (MGET / pipeline), skips entries
// whose build expired, was deleted or moved project, and repeats until the page plus one
// look-ahead build is full or the index is exhausted. Skipped entries are pruned afterwards
// with pruneScript, which re-checks each one atomically.
//
// Round trips on standalone: 2 (page + MGET) when no stale entry is met, plus 1 prune. On
// Cluster: SMEMBERS, then one pipelined round per node for pages and one for builds.
func (s *Store) ListProject(ctx context.Context, projectID, cursor string, limit int) (*buildstatus.Page, error) {
	if err := buildstatus.ValidateProjectID(projectID); err != nil {
		return nil, err
	}
	limit, err := buildstatus.ValidateLimit(limit)
	if err != nil {
		return nil, err
	}
	after, from, err := buildstatus.DecodeProjectCursor(cursor)
	if err != nil {
		return nil, err
	}
	keys, err := s.projectIndexKeys(ctx, projectID)
	if err != nil {
		return nil, err
	}
	shards := make([]*shard, len(keys))
	for i, k := range keys {
		shards[i] = &shard{idx: i, key: k, after: after, from: from}
	}

	need := limit + 1 // one look-ahead build tells whether a next page exists
	var builds []*buildstatus.Build
	var listed []entry
	for len(builds) < need {
		if err := s.refill(ctx, shards, need-len(builds)); err != nil {
			return nil, err
		}
		picked := merge(shards, need-len(builds))
		if len(picked) == 0 {
			if exhausted(shards) {
				break
			}
			continue
		}
		bkeys := make([]string, len(picked))
		for i, e := range picked {
			bkeys[i] = s.keys.Build(e.id)
		}
		values, err := s.fetch(ctx, bkeys)
		if err != nil {
			return nil, err
		}
		for i, raw := range values {
			e := picked[i]
			if raw == nil || !belongsTo(raw, projectID) {
				shards[e.shard].stale = append(shards[e.shard].stale, e)
				continue
			}
			builds = append(builds, buildstatus.NewBuild(raw))
			listed = append(listed, e)
		}
	}
	s.prune(ctx, projectID, shards)

	page := &buildstatus.Page{Builds: builds}
	if len(builds) > limit {
		page.Builds = builds[:limit]
		last := listed[limit-1]
		page.Cursor = buildstatus.ProjectCursor{Score: last.score, BuildID: last.id}.Encode()
	}
	return page, nil
}

// projectIndexKeys returns the index keys of a project: the single index on standalone, the
// shards named by the project's directory on Cluster.
func (s *Store) projectIndexKeys(ctx context.Context, projectID string) ([]string, error) {
	if s.cluster == nil {
		return []string{s.keys.ProjectIndex(projectID)}, nil
	}
	members, err := s.client.SMembers(ctx, s.keys.ProjectShards(projectID)).Result()
	if err != nil {
		return nil, mapErr(err, "listing project builds")
	}
	slots := make([]int, 0, len(members))
	for _, m := range members {
		if n, err := strconv.Atoi(m); err == nil && n >= 0 && n < keyspace.SlotCount {
			slots = append(slots, n)
		}
	}
	slices.Sort(slots)
	keys := make([]string, len(slots))
	for i, n := range slots {
		keys[i] = s.keys.ProjectShardForSlot(projectID, n)
	}
	return keys, nil
}

// refill reads up to count more entries into every shard whose buffer is empty and which is
// not done, in one pipeline.
func (s *Store) refill(ctx context.Context, shards []*shard, count int) error {
	var todo []*shard
	for _, sh := range shards {
		if len(sh.buf) == 0 && !sh.done {
			todo = append(todo, sh)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	calls := make([]redisscript.Call, len(todo))
	for i, sh := range todo {
		score := ""
		if sh.from {
			score = strconv.FormatInt(sh.after.Score, 10)
		}
		calls[i] = redisscript.Call{Keys: []string{sh.key}, Args: []any{score, sh.after.BuildID, count}}
	}
	results := redisscript.RunPipelined(ctx, s.client, pageScript, calls)
	for i, sh := range todo {
		flat, err := results[i].StringSlice()
		if err != nil {
			return mapErr(err, "listing project builds")
		}
		for j := 0; j+1 < len(flat); j += 2 {
			f, err := strconv.ParseFloat(flat[j+1], 64)
			if err != nil {
				return redstate.Wrap(redstate.EINTERNAL, err, "project index holds a non-numeric score")
			}
			sh.buf = append(sh.buf, entry{id: flat[j], score: int64(f), shard: sh.idx})
		}
		if len(sh.buf) < count {
			sh.done = true
		}
		if n := len(sh.buf); n > 0 {
			sh.after = buildstatus.ProjectCursor{Score: sh.buf[n-1].score, BuildID: sh.buf[n-1].id}
			sh.from = true
		}
	}
	return nil
}

// merge takes up to count entries off the shards' buffers in listing order. It stops early
// when a shard that may hold the next entry has an empty buffer and must be refilled first.
func merge(shards []*shard, count int) []entry {
	var out []entry
	for len(out) < count {
		best := -1
		for i, sh := range shards {
			if len(sh.buf) == 0 {
				if !sh.done {
					return out
				}
				continue
			}
			if best < 0 || sh.buf[0].ahead(shards[best].buf[0]) {
				best = i
			}
		}
		if best < 0 {
			return out
		}
		out = append(out, shards[best].buf[0])
		shards[best].buf = shards[best].buf[1:]
	}
	return out
}

func exhausted(shards []*shard) bool {
	for _, sh := range shards {
		if len(sh.buf) > 0 || !sh.done {
			return false
		}
	}
	return true
}

// prune removes the stale entries met while listing (best effort: a failure only leaves
// them for a later listing to skip again).
func (s *Store) prune(ctx context.Context, projectID string, shards []*shard) {
	var calls []redisscript.Call
	for _, sh := range shards {
		if len(sh.stale) == 0 {
			continue
		}
		c := redisscript.Call{Keys: []string{sh.key}, Args: []any{projectID}}
		for _, e := range sh.stale {
			c.Keys = append(c.Keys, s.keys.Build(e.id))
			c.Args = append(c.Args, e.id)
		}
		calls = append(calls, c)
	}
	if len(calls) > 0 {
		redisscript.RunPipelined(ctx, s.client, pruneScript, calls)
	}
}

// belongsTo reports whether a stored value is a document of projectID.
func belongsTo(raw []byte, projectID string) bool {
	_, project, err := buildstatus.IdentityOf(raw)
	return err == nil && project == projectID
}
