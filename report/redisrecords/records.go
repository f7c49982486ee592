// Package redisrecords is the Redis report.RecordStore (semantics checked by
// reporttest.RunRecordStoreSuite), on a standalone, Sentinel or Cluster server.
package redisrecords

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/rediserr"
	"github.com/redstate/redstate/internal/redisscript"
	"github.com/redstate/redstate/queue/redisqueue"
	"github.com/redstate/redstate/redisconn"
	"github.com/redstate/redstate/report"
)

var _ report.RecordStore = (*Store)(nil)

// Options configure a Store. The zero value is ready to use.
type Options struct {
	// Namespace is prepended to every key (e.g. "prod-"); default "". Same rules as
	// redisqueue.Options.Namespace.
	Namespace string
	// Retention is how long a record is kept after its last write (PEXPIRE on every write).
	// Default report.DefaultRecordRetention; at least 1ms.
	Retention time.Duration
	// Now is the clock for UpdatedAt and ListGeneratingOlderThan. Default time.Now.
	Now func() time.Time
}

// Store is the Redis report.RecordStore. It is safe for concurrent use.
//
// A record is the HASH Keys.Record(id) with fields status, answers, result, error
// and updatedAt (RFC 3339, nanoseconds), expiring Retention after its last write. The ZSET
// Keys.Generating() indexes the records in status 3 (member id, score last write in Unix
// ms) for ListGeneratingOlderThan. Every write updates the hash and the index in one script,
// so the index is exact except for records that expired, which ListGeneratingOlderThan
// skips and sweeps. On Cluster both carry the hash tag "{report:records}": all records share
// one slot (one master) so that this stays atomic; see Keys.
//
// Round trips: Create, Submit, Get, SetResult, SetFailed and ResetForRegeneration are one
// each; ListGeneratingOlderThan is two (ZRANGEBYSCORE, then one pipeline of HMGETs), plus one
// pipeline of sweeps when expired entries were found.
type Store struct {
	client    redis.UniversalClient
	keys      report.Keys
	retention time.Duration
	now       func() time.Time
}

// New returns a Store on client: a *redis.Client (standalone or Sentinel) or a
// *redis.ClusterClient (detected by type). Errors: EINVALID.
func New(client redis.UniversalClient, opts Options) (*Store, error) {
	if client == nil {
		return nil, redstate.Errorf(redstate.EINVALID, "redisrecords: a Redis client is required")
	}
	cluster := redisconn.IsCluster(client)
	if _, single := client.(*redis.Client); !single && !cluster {
		return nil, redstate.Errorf(redstate.EINVALID, "redisrecords: %T is not supported; use a standalone, Sentinel or Cluster client", client)
	}
	if err := redisqueue.ValidateNamespace(opts.Namespace); err != nil {
		return nil, err
	}
	if opts.Retention == 0 {
		opts.Retention = report.DefaultRecordRetention
	}
	if opts.Retention < time.Millisecond {
		return nil, redstate.Errorf(redstate.EINVALID, "redisrecords: record retention must be at least 1ms, got %s", opts.Retention)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Store{
		client:    client,
		keys:      report.NewKeys(redstate.Prefix(opts.Namespace, ""), cluster),
		retention: opts.Retention,
		now:       opts.Now,
	}, nil
}

// stamp returns the store's current time as stored (RFC 3339 with nanoseconds, UTC), that
// time parsed back (so that writes and reads return identical values) and its Unix ms.
func (s *Store) stamp() (string, time.Time, int64) {
	now := s.now().UTC()
	str := now.Format(time.RFC3339Nano)
	t, _ := time.Parse(time.RFC3339Nano, str)
	return str, t, now.UnixMilli()
}

// Create implements report.RecordStore.
func (s *Store) Create(ctx context.Context, id int64, status int, answers json.RawMessage) (*report.Record, error) {
	if err := report.CheckCreate(id, status, answers); err != nil {
		return nil, err
	}
	return s.put(ctx, "create", id, status, answers)
}

// Submit implements report.RecordStore.
func (s *Store) Submit(ctx context.Context, id int64, answers json.RawMessage) (*report.Record, error) {
	if err := report.CheckRecordID(id); err != nil {
		return nil, err
	}
	if err := report.CheckRecordJSON("answers", answers); err != nil {
		return nil, err
	}
	return s.put(ctx, "submit", id, report.StatusGenerating, answers)
}

// put runs recordPutScript.
func (s *Store) put(ctx context.Context, mode string, id int64, status int, answers json.RawMessage) (*report.Record, error) {
	str, t, ms := s.stamp()
	res, err := recordPutScript.Run(ctx, s.client, []string{s.keys.Record(id), s.keys.Generating()},
		id, mode, status, string(answers), str, ms, s.retention.Milliseconds()).Text()
	if err != nil {
		return nil, rediserr.Map(err, "record "+mode)
	}
	if res == "EXISTS" {
		return nil, redstate.Errorf(redstate.ECONFLICT, "record %d exists", id)
	}
	if cur, ok := strings.CutPrefix(res, "STATUS:"); ok {
		n, _ := strconv.Atoi(cur)
		return nil, report.SubmitConflict(id, n)
	}
	return &report.Record{ID: id, Status: status, StatusText: report.StatusText(status), Answers: raw(string(answers)), UpdatedAt: t}, nil
}

// Get implements report.RecordStore: one HMGET.
func (s *Store) Get(ctx context.Context, id int64) (*report.Record, error) {
	if err := report.CheckRecordID(id); err != nil {
		return nil, err
	}
	v, err := s.client.HMGet(ctx, s.keys.Record(id), "status", "answers", "result", "error", "updatedAt").Result()
	if err != nil {
		return nil, rediserr.Map(err, "get record")
	}
	if v[0] == nil {
		return nil, notFound(id)
	}
	str := func(x any) string { s, _ := x.(string); return s }
	return decodeRecord(id, str(v[0]), str(v[1]), str(v[2]), str(v[3]), str(v[4]))
}

// SetResult implements report.RecordStore.
func (s *Store) SetResult(ctx context.Context, id int64, result json.RawMessage) (*report.Record, error) {
	if err := report.CheckRecordID(id); err != nil {
		return nil, err
	}
	if err := report.CheckRecordJSON("result", result); err != nil {
		return nil, err
	}
	return s.update(ctx, "result", id, string(result))
}

// SetFailed implements report.RecordStore.
func (s *Store) SetFailed(ctx context.Context, id int64, reason string) (*report.Record, error) {
	if err := report.CheckRecordID(id); err != nil {
		return nil, err
	}
	return s.update(ctx, "failed", id, reason)
}

// ResetForRegeneration implements report.RecordStore: one script that checks status ∈ {3, 5}
// and resets the record atomically.
func (s *Store) ResetForRegeneration(ctx context.Context, id int64) (*report.Record, error) {
	if err := report.CheckRecordID(id); err != nil {
		return nil, err
	}
	return s.update(ctx, "reset", id, "")
}

// update runs recordUpdateScript.
func (s *Store) update(ctx context.Context, mode string, id int64, value string) (*report.Record, error) {
	str, _, ms := s.stamp()
	v, err := recordUpdateScript.Run(ctx, s.client, []string{s.keys.Record(id), s.keys.Generating()},
		id, mode, value, str, ms, s.retention.Milliseconds()).StringSlice()
	if err != nil {
		return nil, rediserr.Map(err, "update record")
	}
	switch {
	case len(v) == 6 && v[0] == "OK":
		return decodeRecord(id, v[1], v[2], v[3], v[4], v[5])
	case len(v) >= 1 && v[0] == "NOTFOUND":
		return nil, notFound(id)
	case len(v) == 2 && v[0] == "CONFLICT":
		st, _ := strconv.Atoi(v[1])
		return nil, redstate.Errorf(redstate.ECONFLICT, "record %d has status %d (%s); only 3 or 5 may be regenerated", id, st, report.StatusText(st))
	}
	return nil, redstate.Errorf(redstate.EINTERNAL, "update record %d: unexpected script reply %q", id, v)
}

// ListGeneratingOlderThan implements report.RecordStore: ZRANGEBYSCORE on the generating index
// up to the cutoff (in ms, rounded down, so no candidate is missed), then one pipeline of
// HMGET status updatedAt to filter exactly (status 3, updatedAt <= cutoff). Index entries of
// expired records are swept by recordSweepScript.
func (s *Store) ListGeneratingOlderThan(ctx context.Context, age time.Duration) ([]int64, error) {
	if age < 0 {
		return nil, redstate.Errorf(redstate.EINVALID, "age must be >= 0")
	}
	cutoff := s.now().Add(-age)
	members, err := s.client.ZRangeByScore(ctx, s.keys.Generating(), &redis.ZRangeBy{
		Min: "-inf", Max: strconv.FormatInt(cutoff.UnixMilli(), 10),
	}).Result()
	if err != nil {
		return nil, rediserr.Map(err, "list generating records")
	}
	ids := []int64{}
	if len(members) == 0 {
		return ids, nil
	}
	var cands []int64
	for _, m := range members {
		if id, err := strconv.ParseInt(m, 10, 64); err == nil && id > 0 {
			cands = append(cands, id)
		}
	}
	cmds := make([]*redis.SliceCmd, len(cands))
	_, _ = s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range cands {
			cmds[i] = p.HMGet(ctx, s.keys.Record(id), "status", "updatedAt")
		}
		return nil
	})
	var sweep []redisscript.Call
	for i, cmd := range cmds {
		v, err := cmd.Result()
		if err != nil {
			return nil, rediserr.Map(err, "list generating records")
		}
		status, _ := v[0].(string)
		updated, _ := v[1].(string)
		if v[0] == nil {
			sweep = append(sweep, redisscript.Call{Keys: []string{s.keys.Record(cands[i]), s.keys.Generating()}, Args: []any{cands[i]}})
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, updated)
		if status == "3" && err == nil && !t.After(cutoff) {
			ids = append(ids, cands[i])
		}
	}
	if len(sweep) > 0 {
		for _, cmd := range redisscript.RunPipelined(ctx, s.client, recordSweepScript, sweep) {
			if err := cmd.Err(); err != nil {
				return nil, rediserr.Map(err, "sweep generating index")
			}
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids, nil
}

// decodeRecord builds a Record from its stored fields.
func decodeRecord(id int64, status, answers, result, errText, updatedAt string) (*report.Record, error) {
	st, err := strconv.Atoi(status)
	if err != nil {
		return nil, redstate.Errorf(redstate.EINTERNAL, "record %d: bad stored status %q", id, status)
	}
	t, err := time.Parse(time.RFC3339Nano, updatedAt)
	if err != nil {
		return nil, redstate.Wrap(redstate.EINTERNAL, err, fmt.Sprintf("record %d: bad stored updatedAt", id))
	}
	return &report.Record{
		ID:         id,
		Status:     st,
		StatusText: report.StatusText(st),
		Answers:    raw(answers),
		Result:     raw(result),
		Error:      errText,
		UpdatedAt:  t,
	}, nil
}

// raw returns s as JSON, nil when empty.
func raw(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}

// notFound is the ENOTFOUND of a missing or expired record.
func notFound(id int64) error {
	return redstate.Errorf(redstate.ENOTFOUND, "record %d not found", id)
}
