package buildstatus

import (
	"strconv"
	"strings"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/keyspace"
)

// DefaultKeyPrefix is the seed's key prefix (section 2.1): project "ingenio", module "publish".
const DefaultKeyPrefix = "ingenio:publish:"

// Keys builds every Redis key and channel name of the registry. It is the only place that does.
//
// Layout (P = Prefix = namespace + key prefix, e.g. "prod-ingenio:publish:"):
//
//	P + "build:" + buildId                         String, the seed's JSON document, TTL
//	P + "project:" + esc(projectId) + ":builds"    Sorted set, project index (standalone/Sentinel)
//	P + "project:{" + tag + "}:" + esc(projectId)  Sorted set, one project-index shard per slot (Cluster)
//	P + "project:" + esc(projectId) + ":shards"    Set of slot numbers that hold shards (Cluster)
//	P + "events:build:" + buildId                  Pub/Sub channel of the build's changes
//	P + "once:{" + tag + "}:" + token              String, a delete's call marker (internal/resend), short TTL
//
// esc is keyspace.EscapeSegment: project ids are free text and never reach a key or pattern
// unescaped. buildId is validated as a canonical UUID before it reaches any key.
type Keys struct {
	// Prefix is prepended to every key, namespace included.
	Prefix string
}

// NewKeys returns the key builder under p: the namespace (e.g. "prod-", may be empty) and the
// registry's key prefix (DefaultKeyPrefix when empty).
func NewKeys(p redstate.KeyPrefix) Keys {
	return Keys{Prefix: p.Or(DefaultKeyPrefix).String()}
}

// CallMarkers returns the prefix of the call markers of writes (internal/resend.MarkerKey),
// outside the patterns the store SCANs.
func (k Keys) CallMarkers() string { return k.Prefix + "once:" }

// Build returns the key of a build document: "ingenio:publish:build:{buildId}" in the seed.
func (k Keys) Build(buildID string) string { return k.Prefix + "build:" + buildID }

// Builds returns the build keys of ids, in order, like Build for each id but with one
// allocation for all their bytes (the keys are substrings of one string).
func (k Keys) Builds(ids []string) []string {
	p := k.Prefix + "build:"
	n := 0
	for _, id := range ids {
		n += len(p) + len(id)
	}
	var sb strings.Builder
	sb.Grow(n)
	for _, id := range ids {
		sb.WriteString(p)
		sb.WriteString(id)
	}
	all := sb.String()
	keys := make([]string, len(ids))
	off := 0
	for i, id := range ids {
		end := off + len(p) + len(id)
		keys[i] = all[off:end]
		off = end
	}
	return keys
}

// BuildIDFromKey returns the build id of a build key, or "" if key is not one.
func (k Keys) BuildIDFromKey(key string) string {
	p := k.Prefix + "build:"
	if len(key) <= len(p) || key[:len(p)] != p {
		return ""
	}
	return key[len(p):]
}

// BuildPattern returns the SCAN MATCH pattern of all build keys, with the prefix glob-escaped.
func (k Keys) BuildPattern() string { return keyspace.GlobEscape(k.Prefix+"build:") + "*" }

// ProjectIndex returns the single project-index key used on standalone and Sentinel Redis.
func (k Keys) ProjectIndex(projectID string) string {
	return k.Prefix + "project:" + keyspace.EscapeSegment(projectID) + ":builds"
}

// ProjectShard returns the project-index shard that lives in the same Cluster slot as the
// build key of buildID, so that the build and its index entry are written by one script.
func (k Keys) ProjectShard(projectID, buildID string) string {
	return k.ProjectShardForSlot(projectID, keyspace.Slot(k.Build(buildID)))
}

// ProjectShardForSlot returns the project-index shard key that lives in slot.
func (k Keys) ProjectShardForSlot(projectID string, slot int) string {
	return k.Prefix + "project:{" + keyspace.SlotTag(slot) + "}:" + keyspace.EscapeSegment(projectID)
}

// ProjectShards returns the key of the set listing the slots that hold shards of a project's
// index on Cluster.
func (k Keys) ProjectShards(projectID string) string {
	return k.Prefix + "project:" + keyspace.EscapeSegment(projectID) + ":shards"
}

// SlotOfBuild returns the Cluster slot of buildID's key, as a decimal string for a shards set.
func (k Keys) SlotOfBuild(buildID string) string {
	return strconv.Itoa(keyspace.Slot(k.Build(buildID)))
}

// Events returns the Pub/Sub channel on which the build's changes are published.
func (k Keys) Events(buildID string) string { return k.Prefix + "events:build:" + buildID }
