package buildstatus

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/redstate/redstate"
)

// platformMembers are the members of a platform's entry, as a merge patch names them.
var platformMembers = []string{"platform", "status", "progress", "logUrl", "downloadUrl", "errorMessage", "startedAt", "completedAt"}

// MaxPatchAttempts bounds the compare-and-set attempts of PatchPlatform when other writers change
// the same build meanwhile.
const MaxPatchAttempts = 100

// MergePlatformPatch applies patch, a JSON merge patch (RFC 7396) of one platform's entry, to
// current (nil when the build has no entry for platform yet): a member of patch replaces the
// entry's, a null member removes it (the field becomes null), a member patch leaves out keeps its
// value. The result names platform; a patch may give "platform" only with that value. The result
// is validated (ValidatePlatformResult: a new entry needs a status). Errors: EINVALID (an unknown
// member, a wrong value, or an invalid result).
func MergePlatformPatch(current *PlatformResult, platform string, patch map[string]json.RawMessage) (*PlatformResult, error) {
	if p, ok := patch["platform"]; ok && string(p) != "null" {
		var named string
		if json.Unmarshal(p, &named) != nil || named != platform {
			return nil, redstate.Errorf(redstate.EINVALID, "body platform %s does not match the path's %q", truncated(string(p)), platform)
		}
	}
	entry := map[string]json.RawMessage{}
	if current != nil {
		b, err := json.Marshal(current)
		if err == nil {
			err = json.Unmarshal(b, &entry)
		}
		if err != nil {
			return nil, redstate.Wrap(redstate.EINTERNAL, err, "encoding the platform entry")
		}
	}
	for name, v := range patch {
		if !slices.Contains(platformMembers, name) {
			return nil, redstate.Errorf(redstate.EINVALID, "unknown member %q in the platform patch: a platform entry has %s", truncated(name), strings.Join(platformMembers, ", "))
		}
		if string(v) == "null" {
			delete(entry, name)
		} else {
			entry[name] = v
		}
	}
	entry["platform"], _ = json.Marshal(platform)
	b, _ := json.Marshal(entry)
	var out PlatformResult
	if err := json.Unmarshal(b, &out); err != nil {
		if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
			return nil, redstate.Errorf(redstate.EINVALID, "platform patch: %s must not be a JSON %s", te.Field, te.Value)
		}
		return nil, redstate.Errorf(redstate.EINVALID, "platform patch: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if err := ValidatePlatformResult(&out); err != nil {
		if current != nil && ValidatePlatformResult(patchedOnly(&out, patch)) == nil {
			// The invalid member is one the patch kept: written by another producer of the
			// seed's format, which nothing validated.
			return nil, redstate.Errorf(redstate.EINVALID, "the stored entry of platform %s keeps an invalid member: %s; give that member in the patch (null clears it)", platform, redstate.ErrorMessage(err))
		}
		return nil, err
	}
	return &out, nil
}

// patchedOnly is merged with only the members patch gives (and platform and status, which every
// entry needs) kept.
func patchedOnly(merged *PlatformResult, patch map[string]json.RawMessage) *PlatformResult {
	out := &PlatformResult{Platform: merged.Platform, Status: merged.Status}
	if _, ok := patch["progress"]; ok {
		out.Progress = merged.Progress
	}
	if _, ok := patch["logUrl"]; ok {
		out.LogURL = merged.LogURL
	}
	if _, ok := patch["downloadUrl"]; ok {
		out.DownloadURL = merged.DownloadURL
	}
	if _, ok := patch["errorMessage"]; ok {
		out.ErrorMessage = merged.ErrorMessage
	}
	return out
}

// PatchPlatform changes one platform's entry of a build by a JSON merge patch (see
// MergePlatformPatch), leaving the members the patch does not name as they are. It reads the
// build, merges, and writes with UpdatePlatform conditioned on the ETag it read, so a concurrent
// change of the build is never lost: when another writer got there first it reads and merges
// again (jittered backoff, at most MaxPatchAttempts). A non-empty ifMatch makes the patch apply
// only to that exact stored value, and is never retried. Errors: EINVALID, ENOTFOUND,
// EPRECONDITION, ECONFLICT (gave up under extreme contention on this build; retry),
// EUNAVAILABLE.
func PatchPlatform(ctx context.Context, s Store, buildID, platform string, patch map[string]json.RawMessage, ifMatch string) (*Build, error) {
	if err := ValidatePlatform(platform); err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		cur, err := s.Get(ctx, buildID)
		if err != nil {
			return nil, err
		}
		if ifMatch != "" && cur.ETag() != ifMatch {
			return nil, redstate.Errorf(redstate.EPRECONDITION, "build %s does not have the expected ETag", buildID)
		}
		doc, err := cur.Doc()
		if err != nil {
			return nil, redstate.Wrap(redstate.EINTERNAL, err, "the stored value of build "+buildID+" is not a valid document")
		}
		next, err := MergePlatformPatch(doc.PlatformResults[platform], platform, patch)
		if err != nil {
			return nil, err
		}
		b, err := s.UpdatePlatform(ctx, buildID, next, cur.ETag())
		if !redstate.IsCode(err, redstate.EPRECONDITION) || ifMatch != "" {
			return b, err
		}
		if attempt >= MaxPatchAttempts {
			return nil, redstate.Errorf(redstate.ECONFLICT, "build %s: gave up after %d conflicting concurrent updates; retry", buildID, attempt)
		}
		limit := min(100*time.Millisecond, 100*time.Microsecond<<min(attempt, 10))
		select {
		case <-ctx.Done():
			return nil, redstate.Wrap(redstate.EUNAVAILABLE, ctx.Err(), "patching build "+buildID)
		case <-time.After(rand.N(limit)):
		}
	}
}

// truncated shortens a user-supplied text for an error message.
func truncated(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
