package report

import (
	"strconv"

	"github.com/redstate/redstate"
)

// DefaultKeyPrefix is the records' block prefix: "report:record:<id>", the legacy application's
// names.
const DefaultKeyPrefix = "report"

// Keys are the Redis keys of the report records (see docs/report.md); the report queue's own
// keys are the queue block's (queue.NewKeys).
//
// Standalone/Sentinel (P = namespace + block prefix, "report" by default):
//
//	P:record:<id>             HASH: status, answers, result, error, updatedAt; PEXPIRE retention
//	P:records:generating      ZSET: member id, score last write (Unix ms), records in status 3
//
// Cluster: every record key carries the one hash tag "{<block prefix>:records}"
// ("<ns>{report:records}:record:<id>", "<ns>{report:records}:generating"), so that a record's
// hash and the generating index are updated by one atomic script. The price is that all
// records live in one slot (one master); correctness of the index comes first.
type Keys struct {
	record     string
	generating string
}

// NewKeys returns the record keys under p: the namespace (no '{' or '}'; may be empty) and the
// records' block prefix (DefaultKeyPrefix when empty).
func NewKeys(p redstate.KeyPrefix, cluster bool) Keys {
	p = p.Or(DefaultKeyPrefix)
	if cluster {
		base := p.Namespace + "{" + p.Block + ":records}:"
		return Keys{record: base + "record:", generating: base + "generating"}
	}
	base := p.String()
	return Keys{record: base + ":record:", generating: base + ":records:generating"}
}

// Record returns the HASH key of record id.
func (k Keys) Record(id int64) string { return k.record + strconv.FormatInt(id, 10) }

// Generating returns the ZSET key indexing the records in status 3 (generating) by last write.
func (k Keys) Generating() string { return k.generating }
