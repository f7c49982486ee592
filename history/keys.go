package history

import (
	"strconv"

	"github.com/redstate/redstate"
)

// DefaultBlockPrefix is the history's key prefix after the namespace.
const DefaultBlockPrefix = "stats:"

// Keys builds every Redis key of the history: one hash per tier and bucket, and the registry
// of series seen.
//
//	<prefix><step>:<start>   hash: series field → count or gauge value, plus the up mark; EXPIREAT start+retention
//	<prefix>series           hash: series field → last second it was written
//
// Bucket keys carry no hash tag: on a Cluster the buckets spread over the masters.
type Keys struct {
	prefix string
}

// NewKeys returns the keys under p (Block "" takes DefaultBlockPrefix).
func NewKeys(p redstate.KeyPrefix) Keys { return Keys{prefix: p.Or(DefaultBlockPrefix).String()} }

// Bucket is the hash of tier t's bucket starting at start (Unix seconds).
func (k Keys) Bucket(t Tier, start int64) string {
	return k.prefix + strconv.FormatInt(t.Step, 10) + ":" + strconv.FormatInt(start, 10)
}

// Series is the registry of series seen.
func (k Keys) Series() string { return k.prefix + "series" }
