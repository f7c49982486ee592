package redisstore

import (
	"context"
	"errors"
	"time"
	"unsafe"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/internal/groups"
)

// Get implements buildstatus.Store: with Options.Cache, the cached document (no round trip
// on a hit); otherwise one GET, coalesced with concurrent Gets into one MGET (see batch.go).
// The document is not decoded (Build.Doc decodes on demand).
func (s *Store) Get(ctx context.Context, buildID string) (*buildstatus.Build, error) {
	if err := checkID(buildID); err != nil {
		return nil, err
	}
	key := s.keys.Build(buildID)
	var raw []byte
	var err error
	if s.cache != nil {
		raw, err = s.cache.Get(ctx, key)
	} else {
		raw, err = s.getValue(ctx, key)
	}
	if err != nil {
		return nil, mapErr(err, "reading build "+buildID)
	}
	return found(raw, buildID)
}

// getFresh is Get from Redis, never from the cache: the read a conditional write (Delete,
// UpdatePlatform) bases its ETag on.
func (s *Store) getFresh(ctx context.Context, buildID string) (*buildstatus.Build, error) {
	raw, err := s.getValue(ctx, s.keys.Build(buildID))
	if err != nil {
		return nil, err
	}
	return found(raw, buildID)
}

// found returns the build of raw, ENOTFOUND when raw is nil.
func found(raw []byte, buildID string) (*buildstatus.Build, error) {
	if raw == nil {
		return nil, redstate.Errorf(redstate.ENOTFOUND, "build %s does not exist", buildID)
	}
	return buildstatus.NewBuild(raw), nil
}

// GetMany implements buildstatus.Store: with Options.Cache, the cached documents and one
// round trip per node for the rest; otherwise one MGET per fetchChunk ids on standalone, one
// pipeline of GETs per fetchChunk ids on Cluster (go-redis sends one batch per node, in
// parallel). A duplicated id is simply read twice (MaxBatch bounds the keys all the same),
// which costs less than removing duplicates first.
func (s *Store) GetMany(ctx context.Context, ids []string) (map[string]*buildstatus.Build, error) {
	if len(ids) > buildstatus.MaxBatch {
		return nil, redstate.Errorf(redstate.EINVALID, "at most %d ids per batch, got %d", buildstatus.MaxBatch, len(ids))
	}
	for _, id := range ids {
		if err := checkID(id); err != nil {
			return nil, err
		}
	}
	out := make(map[string]*buildstatus.Build, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	var values [][]byte
	var err error
	if s.cache != nil {
		values, err = s.cache.MGet(ctx, s.keys.Builds(ids))
	} else {
		values, err = s.fetch(ctx, s.keys.Builds(ids))
	}
	if err != nil {
		return nil, mapErr(err, "reading builds")
	}
	for i, raw := range values {
		if raw != nil {
			out[ids[i]] = buildstatus.NewBuild(raw)
		}
	}
	return out, nil
}

// Exists implements buildstatus.Store: one EXISTS.
func (s *Store) Exists(ctx context.Context, buildID string) (bool, error) {
	if err := checkID(buildID); err != nil {
		return false, err
	}
	n, err := s.client.Exists(ctx, s.keys.Build(buildID)).Result()
	if err != nil {
		return false, mapErr(err, "checking build "+buildID)
	}
	return n > 0, nil
}

// TTL implements buildstatus.Store: one PTTL. A build stored without expiry (written by
// something other than redstate) reports 0.
func (s *Store) TTL(ctx context.Context, buildID string) (time.Duration, error) {
	if err := checkID(buildID); err != nil {
		return 0, err
	}
	d, err := s.client.PTTL(ctx, s.keys.Build(buildID)).Result()
	if err != nil {
		return 0, mapErr(err, "reading the TTL of build "+buildID)
	}
	switch {
	case d == -2:
		return 0, redstate.Errorf(redstate.ENOTFOUND, "build %s does not exist", buildID)
	case d < 0:
		return 0, nil
	}
	return d, nil
}

// fetchChunk is the most keys fetch reads from one Redis node in one round trip, so that a
// reply stays small enough for the client's read timeout whatever the page size: the timeout
// bounds one chunk, not the whole page.
const fetchChunk = 100

// fetch returns the values of keys in order, nil for a missing key: one MGET per fetchChunk
// keys on standalone; on Cluster, the keys grouped by node and one pipeline of GETs per round
// (each node's next fetchChunk keys, nodes in parallel).
func (s *Store) fetch(ctx context.Context, keys []string) ([][]byte, error) {
	if s.cluster != nil {
		return s.fetchCluster(ctx, keys)
	}
	out := make([][]byte, 0, len(keys))
	for start := 0; start < len(keys); start += fetchChunk {
		vals, err := s.client.MGet(ctx, keys[start:min(start+fetchChunk, len(keys))]...).Result()
		if err != nil {
			return nil, mapErr(err, "reading builds")
		}
		for _, v := range vals {
			str, ok := v.(string)
			if !ok {
				out = append(out, nil)
				continue
			}
			out = append(out, wireBytes(str))
		}
	}
	return out, nil
}

// fetchCluster is fetch on Cluster. Grouping the keys by master before chunking makes a round
// trip carry up to fetchChunk keys per node instead of fetchChunk keys spread over every node:
// 1,000 keys on 3 masters take 4 rounds of 3 parallel round trips, not 10. The grouping only
// decides which keys share a round: go-redis still routes every GET itself (a key whose master
// is unknown just joins the nil group).
func (s *Store) fetchCluster(ctx context.Context, keys []string) ([][]byte, error) {
	// Indexes into keys, one group per master.
	byNode := groups.By(groups.Indexes(len(keys)), func(i int) *redis.Client {
		node, err := s.cluster.MasterForKey(ctx, keys[i])
		if err != nil {
			return nil
		}
		return node
	})
	out := make([][]byte, len(keys))
	for lo := 0; ; lo += fetchChunk {
		var round []int
		for _, g := range byNode {
			if lo < len(g) {
				round = append(round, g[lo:min(lo+fetchChunk, len(g))]...)
			}
		}
		if len(round) == 0 {
			return out, nil
		}
		if err := s.getPipelined(ctx, keys, round, out); err != nil {
			return nil, err
		}
	}
}

// getPipelined reads keys[i] into out[i] for every i in idx with one pipeline of GETs.
func (s *Store) getPipelined(ctx context.Context, keys []string, idx []int, out [][]byte) error {
	pipe := s.client.Pipeline()
	cmds := make([]*redis.StringCmd, len(idx))
	for j, i := range idx {
		cmds[j] = pipe.Get(ctx, keys[i])
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return mapErr(err, "reading builds")
	}
	for j, c := range cmds {
		v, err := c.Bytes()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return mapErr(err, "reading builds")
		}
		out[idx[j]] = v
	}
	return nil
}

// wireBytes returns the bytes of a string value go-redis has just read off the wire, without
// copying them. go-redis allocates each such string for that one reply (proto.Reader's
// readStringReply) and its own StringCmd.Bytes hands out the same bytes the same way; the
// reply slice holding the string is dropped by the caller, so the bytes have no other owner.
func wireBytes(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}
