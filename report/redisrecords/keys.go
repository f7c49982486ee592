package redisrecords

import "strconv"

// Keys are the Redis keys of the records (see docs/report.md).
//
// Standalone/Sentinel:
//
//	<ns>report:record:<id>        HASH: status, answers, result, error, updatedAt; PEXPIRE retention
//	<ns>report:records:generating ZSET: member id, score last write (Unix ms), records in status 3
//
// Cluster: every record key carries the one hash tag "{report:records}"
// ("<ns>{report:records}:record:<id>", "<ns>{report:records}:generating"), so that a record's
// hash and the generating index are updated by one atomic script. The price is that all
// records live in one slot (one master); correctness of the index comes first.
type Keys struct {
	record     string
	generating string
}

// NewKeys returns the record keys under namespace (no '{' or '}'; may be empty).
func NewKeys(namespace string, cluster bool) Keys {
	if cluster {
		base := namespace + "{report:records}:"
		return Keys{record: base + "record:", generating: base + "generating"}
	}
	return Keys{record: namespace + "report:record:", generating: namespace + "report:records:generating"}
}

// Record returns the HASH key of record id.
func (k Keys) Record(id int64) string { return k.record + strconv.FormatInt(id, 10) }

// Generating returns the ZSET key indexing the records in status 3 (生成中) by last write.
func (k Keys) Generating() string { return k.generating }
