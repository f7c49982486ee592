package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/redstate/redstate"
)

// LocalDateTimeLayout is the seed's zone-less ISO-8601 date-time ("2025-11-24T10:30:00");
// stored times are UTC, truncated to whole seconds.
const LocalDateTimeLayout = "2006-01-02T15:04:05"

// MaxCheckpointBytes bounds a checkpoint's encoded JSON.
const MaxCheckpointBytes = 1 << 20

// Checkpoint is a task's resume point (docs/executor.md, Checkpoint guarantees). Stored as one JSON
// document:
//
//	{"version":3,"lastCompletedStageIndex":2,"completedStages":["stage-0","stage-1","stage-2"],
//	 "contextData":{"customKey":"customValue"},"savedAt":"2025-11-24T10:30:00"}
//
// "version" is always the FIRST field, so the bytes `{"version":N,` at the start of the value
// identify it; the Redis backend validates its local cache and its compare-and-set with a
// prefix read (GETRANGE) of only those bytes.
type Checkpoint struct {
	// Version is assigned by the store on every Put and is ignored on input. Versions are
	// positive, opaque and increase with each Put of a task; the first is not 1 (it is derived
	// from the server clock so that a checkpoint removed and created again never reuses a
	// version a cache may still hold).
	Version int64
	// LastCompletedStageIndex is the index of the last completed stage, -1 for none.
	LastCompletedStageIndex int
	// CompletedStages are the names of the completed stages, in order.
	CompletedStages []string
	// ContextData is free key/value state the stages share.
	ContextData map[string]string
	// SavedAt is when the checkpoint was written; the store sets it (UTC, whole seconds) when
	// it is zero.
	SavedAt time.Time
}

// Clone returns a deep copy of c.
func (c Checkpoint) Clone() Checkpoint {
	c.CompletedStages = slices.Clone(c.CompletedStages)
	c.ContextData = maps.Clone(c.ContextData)
	return c
}

// CheckpointStore persists one checkpoint per task. Implementations are safe for concurrent
// use; Redis and memory backends behave identically (statetest.RunCheckpointSuite).
type CheckpointStore interface {
	// Put stores cp as taskID's checkpoint with the store's TTL (refreshed by every Put), as a
	// compare-and-set: expectedVersion must equal the stored version, 0 meaning "no checkpoint
	// may exist". It returns the new version. A Put can never move lastCompletedStageIndex
	// backwards: a checkpoint whose index is below the stored one is rejected even with the
	// right version (to start over, Remove first).
	// Errors: EINVALID (bad id, index < -1, negative expectedVersion), ETOOLARGE (encoded
	// checkpoint over MaxCheckpointBytes), EPRECONDITION (stored version differs from
	// expectedVersion, including "exists" for 0 and "missing" for non-zero), ECONFLICT (index
	// would go backwards), EUNAVAILABLE.
	Put(ctx context.Context, taskID string, cp Checkpoint, expectedVersion int64) (int64, error)

	// Get returns taskID's checkpoint with its Version. A cached copy is returned only after
	// the backend confirmed it is still the stored version, so Get never returns a checkpoint
	// another instance has replaced or removed. Errors: EINVALID, ENOTFOUND (missing or
	// expired), EUNAVAILABLE.
	Get(ctx context.Context, taskID string) (Checkpoint, error)

	// Remove deletes taskID's checkpoint; removing a missing one is not an error.
	// Errors: EINVALID, EUNAVAILABLE.
	Remove(ctx context.Context, taskID string) error
}

// checkpointWire is the stored JSON without its version, fields in the seed's order.
type checkpointWire struct {
	LastCompletedStageIndex int               `json:"lastCompletedStageIndex"`
	CompletedStages         []string          `json:"completedStages"`
	ContextData             map[string]string `json:"contextData"`
	SavedAt                 string            `json:"savedAt"`
}

// ValidateCheckpoint returns EINVALID for an index below -1.
func ValidateCheckpoint(cp Checkpoint) error {
	if cp.LastCompletedStageIndex < -1 {
		return redstate.Errorf(redstate.EINVALID, "lastCompletedStageIndex must be >= -1, got %d", cp.LastCompletedStageIndex)
	}
	return nil
}

// EncodeCheckpointBody returns the stored JSON of cp after its version field: the bytes that
// follow `{"version":N,`, i.e. `"lastCompletedStageIndex":…}`. Errors: ETOOLARGE, EINTERNAL.
func EncodeCheckpointBody(cp Checkpoint) ([]byte, error) {
	w := checkpointWire{
		LastCompletedStageIndex: cp.LastCompletedStageIndex,
		CompletedStages:         cp.CompletedStages,
		ContextData:             cp.ContextData,
		SavedAt:                 cp.SavedAt.UTC().Format(LocalDateTimeLayout),
	}
	if w.CompletedStages == nil {
		w.CompletedStages = []string{}
	}
	if w.ContextData == nil {
		w.ContextData = map[string]string{}
	}
	b, err := json.Marshal(w)
	if err != nil {
		return nil, redstate.Wrap(redstate.EINTERNAL, err, "encode checkpoint")
	}
	if len(b) > MaxCheckpointBytes {
		return nil, redstate.Errorf(redstate.ETOOLARGE, "checkpoint is %d bytes, limit %d", len(b), MaxCheckpointBytes)
	}
	return b[1:], nil
}

// VersionPrefix returns the leading bytes of a stored checkpoint of the given version:
// `{"version":N,`.
func VersionPrefix(version int64) string {
	return `{"version":` + strconv.FormatInt(version, 10) + ","
}

// MaxVersionPrefixLen is the longest VersionPrefix (19 digits).
const MaxVersionPrefixLen = len(`{"version":,`) + 19

// ParseVersionPrefix returns the version of a stored checkpoint from its first bytes (at
// least up to the comma after the version). ok is false if data does not start with a
// well-formed `{"version":N,`.
func ParseVersionPrefix(data []byte) (version int64, ok bool) {
	const head = `{"version":`
	if !bytes.HasPrefix(data, []byte(head)) {
		return 0, false
	}
	rest := data[len(head):]
	end := bytes.IndexByte(rest, ',')
	if end <= 0 || end > 19 {
		return 0, false
	}
	v, err := strconv.ParseInt(string(rest[:end]), 10, 64)
	if err != nil || v <= 0 {
		return 0, false
	}
	return v, true
}

// EncodeCheckpoint returns the complete stored JSON of cp at the given version.
func EncodeCheckpoint(cp Checkpoint, version int64) ([]byte, error) {
	body, err := EncodeCheckpointBody(cp)
	if err != nil {
		return nil, err
	}
	return append([]byte(VersionPrefix(version)), body...), nil
}

// DecodeCheckpoint parses a stored checkpoint. Errors: EINTERNAL (not a checkpoint).
func DecodeCheckpoint(data []byte) (Checkpoint, error) {
	v, ok := ParseVersionPrefix(data)
	if !ok {
		return Checkpoint{}, redstate.Errorf(redstate.EINTERNAL, "stored checkpoint does not start with a version")
	}
	var w checkpointWire
	if err := json.Unmarshal(data, &w); err != nil {
		return Checkpoint{}, redstate.Wrap(redstate.EINTERNAL, err, "decode checkpoint")
	}
	cp := Checkpoint{
		Version:                 v,
		LastCompletedStageIndex: w.LastCompletedStageIndex,
		CompletedStages:         w.CompletedStages,
		ContextData:             w.ContextData,
	}
	if w.SavedAt != "" {
		t, err := time.Parse(LocalDateTimeLayout, w.SavedAt)
		if err != nil {
			return Checkpoint{}, redstate.Wrap(redstate.EINTERNAL, err, fmt.Sprintf("decode checkpoint savedAt %q", w.SavedAt))
		}
		cp.SavedAt = t
	}
	return cp, nil
}

// StampSavedAt returns cp with SavedAt set to now (UTC, whole seconds) if it is zero, and
// normalised to UTC whole seconds otherwise, as stored.
func StampSavedAt(cp Checkpoint, now time.Time) Checkpoint {
	if cp.SavedAt.IsZero() {
		cp.SavedAt = now
	}
	cp.SavedAt = cp.SavedAt.UTC().Truncate(time.Second)
	return cp
}
