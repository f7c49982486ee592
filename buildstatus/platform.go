package buildstatus

import (
	"slices"
	"time"
)

// ApplyPlatformResult returns a copy of doc in which platformResults[r.Platform] is r, the
// platform is listed in platforms (appended if absent) and updatedAt is now (zone-less UTC,
// whole seconds, the seed's format). doc itself is not modified. Every backend's
// UpdatePlatform applies exactly this change.
func ApplyPlatformResult(doc *PublishResponse, r *PlatformResult, now time.Time) *PublishResponse {
	out := *doc
	out.PlatformResults = make(map[string]*PlatformResult, len(doc.PlatformResults)+1)
	for k, v := range doc.PlatformResults {
		out.PlatformResults[k] = v
	}
	result := *r
	out.PlatformResults[r.Platform] = &result
	out.Platforms = slices.Clone(doc.Platforms)
	if !slices.Contains(out.Platforms, r.Platform) {
		out.Platforms = append(out.Platforms, r.Platform)
	}
	out.UpdatedAt = NewLocalDateTime(now)
	return &out
}
