package statetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/executor"
)

// NewCheckpointStore returns an empty, isolated CheckpointStore whose checkpoints live ttl.
type NewCheckpointStore func(t *testing.T, ttl time.Duration) executor.CheckpointStore

// RunCheckpointSuite checks the executor.CheckpointStore contract.
func RunCheckpointSuite(t *testing.T, newStore NewCheckpointStore, _ Features) {
	store := func(t *testing.T) executor.CheckpointStore { return newStore(t, time.Hour) }
	runAll(t, []namedTest{
		{"PutGetRoundTrip", func(t *testing.T) {
			s, ctx, id := store(t), t.Context(), newID("task")
			saved := time.Date(2025, 11, 24, 10, 30, 0, 0, time.UTC)
			cp := executor.Checkpoint{LastCompletedStageIndex: 2, CompletedStages: []string{"stage-0", "stage-1", "stage-2"},
				ContextData: map[string]string{"customKey": "customValue"}, SavedAt: saved}
			v, err := s.Put(ctx, id, cp, 0)
			must(t, err, "Put")
			if v <= 0 {
				t.Fatalf("version %d, want > 0", v)
			}
			got, err := s.Get(ctx, id)
			must(t, err, "Get")
			if got.Version != v || got.LastCompletedStageIndex != 2 || !slices.Equal(got.CompletedStages, cp.CompletedStages) ||
				got.ContextData["customKey"] != "customValue" || !got.SavedAt.Equal(saved) {
				t.Fatalf("Get = %+v, want %+v at version %d", got, cp, v)
			}
			// Mutating the result must not change the store's copy.
			got.CompletedStages[0] = "mutated"
			again, _ := s.Get(ctx, id)
			if again.CompletedStages[0] != "stage-0" {
				t.Fatal("Get returned shared state")
			}
		}},
		{"SavedAtStampedWhenZero", func(t *testing.T) {
			s, ctx, id := store(t), t.Context(), newID("task")
			_, err := s.Put(ctx, id, executor.Checkpoint{LastCompletedStageIndex: -1}, 0)
			must(t, err, "Put")
			got, err := s.Get(ctx, id)
			must(t, err, "Get")
			if got.SavedAt.IsZero() || time.Since(got.SavedAt) > time.Minute {
				t.Fatalf("savedAt %v not stamped", got.SavedAt)
			}
		}},
		{"CompareAndSet", func(t *testing.T) {
			s, ctx, id := store(t), t.Context(), newID("task")
			_, err := s.Put(ctx, id, executor.Checkpoint{}, 5)
			wantCode(t, err, redstate.EPRECONDITION, "Put with a version on a missing checkpoint")
			v1, err := s.Put(ctx, id, executor.Checkpoint{LastCompletedStageIndex: 0}, 0)
			must(t, err, "create")
			_, err = s.Put(ctx, id, executor.Checkpoint{LastCompletedStageIndex: 1}, 0)
			wantCode(t, err, redstate.EPRECONDITION, "create over an existing checkpoint")
			v2, err := s.Put(ctx, id, executor.Checkpoint{LastCompletedStageIndex: 1}, v1)
			must(t, err, "update")
			if v2 <= v1 {
				t.Fatalf("version went from %d to %d", v1, v2)
			}
			_, err = s.Put(ctx, id, executor.Checkpoint{LastCompletedStageIndex: 2}, v1)
			wantCode(t, err, redstate.EPRECONDITION, "stale version")
			got, _ := s.Get(ctx, id)
			if got.Version != v2 || got.LastCompletedStageIndex != 1 {
				t.Fatalf("after stale write: %+v", got)
			}
		}},
		{"NeverBackwards", func(t *testing.T) {
			s, ctx, id := store(t), t.Context(), newID("task")
			v, err := s.Put(ctx, id, executor.Checkpoint{LastCompletedStageIndex: 3}, 0)
			must(t, err, "create")
			_, err = s.Put(ctx, id, executor.Checkpoint{LastCompletedStageIndex: 2}, v)
			wantCode(t, err, redstate.ECONFLICT, "backwards write with the right version")
			v, err = s.Put(ctx, id, executor.Checkpoint{LastCompletedStageIndex: 3, ContextData: map[string]string{"k": "v"}}, v)
			must(t, err, "same index rewrite")
			got, _ := s.Get(ctx, id)
			if got.LastCompletedStageIndex != 3 || got.ContextData["k"] != "v" || got.Version != v {
				t.Fatalf("got %+v", got)
			}
		}},
		{"RemoveThenRecreateNeverReusesVersion", func(t *testing.T) {
			s, ctx, id := store(t), t.Context(), newID("task")
			v1, err := s.Put(ctx, id, executor.Checkpoint{LastCompletedStageIndex: 4}, 0)
			must(t, err, "create")
			_, _ = s.Get(ctx, id) // warm any cache
			must(t, s.Remove(ctx, id), "Remove")
			must(t, s.Remove(ctx, id), "Remove again")
			_, err = s.Get(ctx, id)
			wantCode(t, err, redstate.ENOTFOUND, "Get after Remove")
			v2, err := s.Put(ctx, id, executor.Checkpoint{LastCompletedStageIndex: 0}, 0)
			must(t, err, "recreate at a lower index")
			if v2 == v1 {
				t.Fatalf("recreated checkpoint reused version %d", v1)
			}
			got, _ := s.Get(ctx, id)
			if got.LastCompletedStageIndex != 0 {
				t.Fatalf("got %+v", got)
			}
		}},
		{"Invalid", func(t *testing.T) {
			s, ctx := store(t), t.Context()
			for _, bad := range badIDs {
				_, err := s.Put(ctx, bad, executor.Checkpoint{}, 0)
				wantCode(t, err, redstate.EINVALID, "Put "+bad)
				_, err = s.Get(ctx, bad)
				wantCode(t, err, redstate.EINVALID, "Get "+bad)
				wantCode(t, s.Remove(ctx, bad), redstate.EINVALID, "Remove "+bad)
			}
			_, err := s.Put(ctx, newID("task"), executor.Checkpoint{LastCompletedStageIndex: -2}, 0)
			wantCode(t, err, redstate.EINVALID, "index -2")
			_, err = s.Put(ctx, newID("task"), executor.Checkpoint{}, -1)
			wantCode(t, err, redstate.EINVALID, "negative version")
			big := executor.Checkpoint{ContextData: map[string]string{"x": string(make([]byte, executor.MaxCheckpointBytes))}}
			_, err = s.Put(ctx, newID("task"), big, 0)
			wantCode(t, err, redstate.ETOOLARGE, "oversized")
		}},
		{"TTL", func(t *testing.T) {
			s, ctx, id := newStore(t, shortTTL), t.Context(), newID("task")
			_, err := s.Put(ctx, id, executor.Checkpoint{}, 0)
			must(t, err, "Put")
			eventually(t, "checkpoint expiry", func() bool {
				_, err := s.Get(ctx, id)
				return redstate.IsCode(err, redstate.ENOTFOUND)
			})
		}},
		{"TwoWritersNeverBackwards", func(t *testing.T) { twoWritersProperty(t, store(t)) }},
	})
}

// twoWritersProperty: two writers of one task's checkpoint, one of which works from a stale
// view (it re-reads only sometimes), interleaved at random; lastCompletedStageIndex as read
// never decreases and never exceeds what a writer wrote.
func twoWritersProperty(t *testing.T, s executor.CheckpointStore) {
	ctx := context.Background()
	rapid.Check(t, func(rt *rapid.T) {
		id := newID("prop")
		type writer struct {
			version int64
			next    int
		}
		ws := []*writer{{next: 0}, {next: 0}}
		highest := -1
		for range rapid.IntRange(1, 40).Draw(rt, "steps") {
			w := ws[rapid.IntRange(0, 1).Draw(rt, "writer")]
			switch rapid.IntRange(0, 2).Draw(rt, "action") {
			case 0: // refresh view
				cp, err := s.Get(ctx, id)
				if err == nil {
					w.version, w.next = cp.Version, cp.LastCompletedStageIndex+1
				} else if !redstate.IsCode(err, redstate.ENOTFOUND) {
					rt.Fatalf("Get: %v", err)
				}
			case 1, 2: // write the next stage, or a stale (lower) one
				idx := w.next
				if rapid.Bool().Draw(rt, "stale") {
					idx = rapid.IntRange(-1, max(w.next, 0)).Draw(rt, "staleIndex")
				}
				v, err := s.Put(ctx, id, executor.Checkpoint{LastCompletedStageIndex: idx}, w.version)
				switch {
				case err == nil:
					if idx < highest {
						rt.Fatalf("write of index %d accepted after %d", idx, highest)
					}
					highest = idx
					w.version, w.next = v, idx+1
				case redstate.IsCode(err, redstate.EPRECONDITION), redstate.IsCode(err, redstate.ECONFLICT):
				default:
					rt.Fatalf("Put: %v", err)
				}
			}
			cp, err := s.Get(ctx, id)
			if err == nil && cp.LastCompletedStageIndex != highest {
				rt.Fatalf("stored index %d, highest accepted %d", cp.LastCompletedStageIndex, highest)
			}
		}
	})
}
