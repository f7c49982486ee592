package redisstore

import (
	"context"
	"encoding/base64"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/internal/keyspace"
)

// maxScanCount caps the COUNT of one SCAN call.
const maxScanCount = 4096

// List implements buildstatus.Store. It walks every master with SCAN MATCH keys.BuildPattern()
// TYPE string: the standalone server, or on Cluster each master in address order
// (ForEachMaster is unordered, so masters come from CLUSTER SLOTS). A page keeps scanning
// until it holds limit keys or the walk ends; COUNT starts at limit and doubles (up to
// maxScanCount) while matches are sparse, so a page overshoots limit only by what one
// sparse batch finds. The cursor is base64url of
// "nodeIndex:scanCursor". Keys whose suffix is not a canonical build id, and keys that
// vanished or do not hold a document, are skipped. The documents are fetched with one MGET
// (standalone) or one pipeline (Cluster).
//
// Round trips: the SCAN calls (usually 1 when most keys are builds), plus 1 to fetch, plus
// CLUSTER SLOTS on Cluster.
// The walk's guarantee assumes the Cluster topology does not change during it.
func (s *Store) List(ctx context.Context, cursor string, limit int) (*buildstatus.Page, error) {
	limit, err := buildstatus.ValidateLimit(limit)
	if err != nil {
		return nil, err
	}
	node, scan, err := decodeListCursor(cursor)
	if err != nil {
		return nil, err
	}
	nodes, err := s.scanNodes(ctx)
	if err != nil {
		return nil, err
	}
	if node >= len(nodes) {
		return nil, redstate.Errorf(redstate.EINVALID, "cursor %q names a node that no longer exists", cursor)
	}
	pattern := s.keys.BuildPattern()
	var ids, keys []string
	done := false
	for count := int64(limit); len(keys) < limit; count = min(2*count, maxScanCount) {
		found, next, err := nodes[node].ScanType(ctx, scan, pattern, count, "string").Result()
		if err != nil {
			return nil, mapErr(err, "listing builds")
		}
		for _, k := range found {
			id := s.keys.BuildIDFromKey(k)
			if checkID(id) == nil {
				ids = append(ids, id)
				keys = append(keys, k)
			}
		}
		scan = next
		if scan == 0 {
			node++
			if node == len(nodes) {
				done = true
				break
			}
		}
	}
	values, err := s.fetch(ctx, keys)
	if err != nil {
		return nil, err
	}
	page := &buildstatus.Page{Builds: make([]*buildstatus.Build, 0, len(keys))}
	for i, raw := range values {
		if raw == nil {
			continue
		}
		if id, _, err := buildstatus.IdentityOf(raw); err != nil || id != ids[i] {
			continue
		}
		page.Builds = append(page.Builds, buildstatus.NewBuild(raw))
	}
	if !done {
		page.Cursor = encodeListCursor(node, scan)
	}
	return page, nil
}

// scanNodes returns the servers to SCAN, in a stable order: the one server, or the Cluster
// masters sorted by address.
func (s *Store) scanNodes(ctx context.Context) ([]redis.Cmdable, error) {
	if s.cluster == nil {
		return []redis.Cmdable{s.client}, nil
	}
	ranges, err := s.cluster.ClusterSlots(ctx).Result()
	if err != nil {
		return nil, mapErr(err, "listing builds")
	}
	firstSlot := map[string]int{}
	for _, r := range ranges {
		if len(r.Nodes) == 0 {
			continue
		}
		addr := r.Nodes[0].Addr
		if cur, ok := firstSlot[addr]; !ok || r.Start < cur {
			firstSlot[addr] = r.Start
		}
	}
	addrs := make([]string, 0, len(firstSlot))
	for a := range firstSlot {
		addrs = append(addrs, a)
	}
	slices.Sort(addrs)
	nodes := make([]redis.Cmdable, len(addrs))
	for i, a := range addrs {
		c, err := s.cluster.MasterForKey(ctx, "{"+keyspace.SlotTag(firstSlot[a])+"}")
		if err != nil {
			return nil, mapErr(err, "listing builds")
		}
		nodes[i] = c
	}
	return nodes, nil
}

func encodeListCursor(node int, scan uint64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(node) + ":" + strconv.FormatUint(scan, 10)))
}

// decodeListCursor parses a List cursor; "" is the start of the walk.
func decodeListCursor(s string) (node int, scan uint64, err error) {
	if s == "" {
		return 0, 0, nil
	}
	invalid := redstate.Errorf(redstate.EINVALID, "cursor %q is not a cursor this listing returned", truncate(s))
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return 0, 0, invalid
	}
	nodeText, scanText, ok := strings.Cut(string(raw), ":")
	if !ok {
		return 0, 0, invalid
	}
	node, err = strconv.Atoi(nodeText)
	if err != nil || node < 0 {
		return 0, 0, invalid
	}
	if scan, err = strconv.ParseUint(scanText, 10, 64); err != nil {
		return 0, 0, invalid
	}
	return node, scan, nil
}

func truncate(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
