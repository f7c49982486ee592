package redisstore

import (
	"context"
	"errors"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/coalesce"
	"github.com/redstate/redstate/internal/groups"
	"github.com/redstate/redstate/internal/keyspace"
	"github.com/redstate/redstate/internal/rediserr"
	"github.com/redstate/redstate/internal/redisscript"
)

// Group commit. Concurrent Gets and Saves are coalesced (internal/coalesce): the calls waiting
// while every worker is busy leave together, Gets as one MGET (Cluster: one pipeline, one round
// trip per node) and Saves as one saveScript call per slot. Each save stays atomic on its own;
// a lone call still costs one round trip. Options.DirectCalls turns this off.

// saveReq is one save: its two keys, its saveArgs script values and whether it is
// conditional (IfMatch, IfNoneMatch: its call then runs once, see saveScript).
type saveReq struct {
	buildKey, indexKey string
	args               []any
	conditional        bool
}

// saveRes is one save's script reply: the result code and, for a PRECONDITION asked to,
// the current value.
type saveRes struct {
	code string
	cur  []byte
}

// batchers are the Store's coalescers; nil when Options.DirectCalls is set.
type batchers struct {
	gets  *coalesce.Batcher[string, []byte]
	saves *coalesce.Batcher[saveReq, saveRes]
}

// saveWorkers is the default number of save batches in flight. Two: with one, Redis idles
// while a batch's replies travel back and the next batch is written (16 clients on a quiet
// 2-core machine: 0.87-0.91 x Dapr's state store), with two one batch runs while the next forms
// (1.04-1.08 x, docs/benchmarks.md); three brought nothing more. Fewer batches in flight mean
// more saves per call and less CPU per save, which a saturated machine prefers (one batch: 7.4
// saves per call and 28 us of client and server CPU per save, four: 3 and 34 us). A lone save
// still leaves at once.
const saveWorkers = 2

func (s *Store) startBatchers(gets, saves coalesce.Options) {
	if saves.Workers <= 0 {
		saves.Workers = saveWorkers
	}
	s.batch = &batchers{
		gets:  coalesce.New(gets, s.execGets),
		saves: coalesce.New(saves, s.execSaves),
	}
}

// Close stops the Store's background workers. Calls made after Close fail with EUNAVAILABLE.
// The Redis client is the caller's and stays open.
func (s *Store) Close() error {
	s.hub.close()
	if s.batch != nil {
		s.batch.gets.Close()
		s.batch.saves.Close()
	}
	return nil
}

// getValue returns the value at key, nil if missing.
func (s *Store) getValue(ctx context.Context, key string) ([]byte, error) {
	if s.batch == nil {
		vals, err := s.fetch(ctx, []string{key})
		if err != nil {
			return nil, err
		}
		return vals[0], nil
	}
	v, err := s.batch.gets.Do(ctx, key)
	return v, batchErr(err, "reading build")
}

func (s *Store) execGets(ctx context.Context, keys []string) []coalesce.Outcome[[]byte] {
	out := make([]coalesce.Outcome[[]byte], len(keys))
	vals, err := s.fetch(ctx, keys)
	for i := range out {
		if err != nil {
			out[i].Err = err
		} else {
			out[i].Value = vals[i]
		}
	}
	return out
}

// runSave runs one save through saveScript, coalesced with concurrent ones unless DirectCalls.
// The build key is marked written in the cache before and after (Options.Cache).
func (s *Store) runSave(ctx context.Context, req saveReq) (saveRes, error) {
	s.wrote(req.buildKey)
	defer s.wrote(req.buildKey)
	if s.batch == nil {
		out := s.execSaves(ctx, []saveReq{req})[0]
		return out.Value, out.Err
	}
	res, err := s.batch.saves.Do(ctx, req)
	return res, batchErr(err, "saving build")
}

// execSaves runs saves as one saveScript call per Cluster slot (one call in all on standalone
// and Sentinel), all calls in one pipeline; a call with a conditional save gets a call marker
// of its own (markerKey).
func (s *Store) execSaves(ctx context.Context, reqs []saveReq) []coalesce.Outcome[saveRes] {
	bySlot := [][]int{groups.Indexes(len(reqs))}
	if s.cluster != nil {
		bySlot = groups.By(bySlot[0], func(i int) int { return keyspace.Slot(reqs[i].buildKey) })
	}
	calls := make([]redisscript.Call, len(bySlot))
	ttl := s.ttl.Milliseconds()
	for g, members := range bySlot {
		conditional := false
		for _, i := range members {
			conditional = conditional || reqs[i].conditional
		}
		keys := make([]string, 0, 1+2*len(members))
		keys = append(keys, s.markerKey(reqs[members[0]].buildKey, conditional))
		args := make([]any, 0, 3+saveArgs*len(members))
		args = append(args, ttl, s.window.Milliseconds(), flag(conditional))
		for _, i := range members {
			keys = append(keys, reqs[i].buildKey, reqs[i].indexKey)
			args = append(args, reqs[i].args...)
		}
		calls[g] = redisscript.Call{Keys: keys, Args: args}
	}
	out := make([]coalesce.Outcome[saveRes], len(reqs))
	for g, cmd := range redisscript.RunPipelined(ctx, s.client, saveScript, calls) {
		replies, err := cmd.Slice()
		for k, i := range bySlot[g] {
			if err != nil {
				out[i].Err = mapErr(err, "saving build")
				continue
			}
			if k >= len(replies) {
				out[i].Err = redstate.Errorf(redstate.EINTERNAL, "redisstore: saveScript returned %d replies for %d saves", len(replies), len(bySlot[g]))
				continue
			}
			item, _ := replies[k].([]any)
			code, cur, perr := parseResult(item)
			if perr == nil && code == resError {
				out[i].Err = rediserr.Reply(string(cur), "saving build")
				continue
			}
			out[i] = coalesce.Outcome[saveRes]{Value: saveRes{code: code, cur: cur}, Err: perr}
		}
	}
	return out
}

// batchErr maps a coalescer's own error (closed store) to the contract's codes; errors from
// the batch itself are already mapped.
func batchErr(err error, op string) error {
	switch {
	case err == coalesce.ErrClosed:
		return unavailable(err, op+": store closed")
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		// The caller's context ended while waiting (Do returns ctx.Err() as is): map it like
		// a direct call's (rediserr.Map), so that every error is a *redstate.Error.
		return unavailable(err, op)
	}
	return err
}
