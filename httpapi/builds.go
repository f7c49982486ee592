package httpapi

import (
	"encoding/json"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/buildstatus"
)

// notFoundMessage is the 404 message for a missing build, with the seed's wording appended.
const notFoundMessage = "build not found (构建任务不存在)"

// pathBuildID returns the canonical {buildId} of the request path. Errors: EINVALID.
func pathBuildID(r *http.Request) (string, error) {
	return buildstatus.NormalizeBuildID(r.PathValue("buildId"))
}

// buildErr rewrites a store's ENOTFOUND into the API's "build not found" message.
func buildErr(err error) error {
	if redstate.IsCode(err, redstate.ENOTFOUND) {
		return redstate.Wrap(redstate.ENOTFOUND, err, notFoundMessage)
	}
	return err
}

// setETag sets the ETag header of a stored build.
func setETag(w http.ResponseWriter, etag string) {
	w.Header().Set("ETag", `"`+etag+`"`)
}

// ifMatch turns an If-Match header into the one strong ETag a store condition takes. ""
// means no condition. allowAny permits "*", which then means no extra condition (for
// operations that already require the build to exist). A list of ETags (RFC 9110 13.1.1) is
// resolved against the build's current ETag: the one that equals it becomes the condition, so
// the store still checks it atomically; when none does the answer is 412 at once.
// Errors: EINVALID, EPRECONDITION (weak tag, or no listed tag is current), ENOTFOUND, EUNAVAILABLE.
func (s *server) ifMatch(r *http.Request, id string, allowAny bool) (string, error) {
	v := strings.TrimSpace(r.Header.Get("If-Match"))
	switch {
	case v == "":
		return "", nil
	case v == "*" && allowAny:
		return "", nil
	case v == "*":
		return "", redstate.Errorf(redstate.EINVALID, "If-Match: * is not supported here; send the build's ETag")
	}
	var tags []string
	for t := range strings.SplitSeq(v, ",") {
		t = strings.TrimSpace(t)
		switch {
		case t == "":
			continue
		case strings.HasPrefix(t, "W/"):
			return "", redstate.Errorf(redstate.EPRECONDITION, "If-Match needs strong ETags, got %s", truncate(t))
		case t == "*":
			return "", redstate.Errorf(redstate.EINVALID, "If-Match: * cannot be combined with ETags")
		}
		tag := strings.Trim(t, `"`)
		if tag == "" {
			return "", redstate.Errorf(redstate.EINVALID, "If-Match holds an empty ETag")
		}
		tags = append(tags, tag)
	}
	switch len(tags) {
	case 0:
		return "", redstate.Errorf(redstate.EINVALID, "If-Match holds no ETag")
	case 1:
		return tags[0], nil
	}
	cur, err := s.builds.Get(r.Context(), id)
	if err != nil {
		return "", buildErr(err)
	}
	if slices.Contains(tags, cur.ETag()) {
		return cur.ETag(), nil
	}
	return "", redstate.Errorf(redstate.EPRECONDITION, "none of the %d ETags in If-Match is the build's current one", len(tags))
}

// noneMatches reports whether an If-None-Match header value matches etag (weak comparison).
func noneMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.Trim(strings.TrimPrefix(t, "W/"), `"`) == etag {
			return true
		}
	}
	return false
}

// putBuild stores a whole document: PUT /v1/builds/{buildId}. Body PublishResponse; its
// buildId may be omitted and must otherwise equal the path's. If-Match and If-None-Match: *
// make it conditional. 200 with the stored document and its ETag.
func (s *server) putBuild(w http.ResponseWriter, r *http.Request) error {
	id, err := pathBuildID(r)
	if err != nil {
		return err
	}
	var opts buildstatus.SaveOptions
	if opts.IfMatch, err = s.ifMatch(r, id, false); err != nil {
		return err
	}
	if v := strings.TrimSpace(r.Header.Get("If-None-Match")); v != "" {
		if v != "*" {
			return redstate.Errorf(redstate.EINVALID, "If-None-Match on PUT supports only *")
		}
		opts.IfNoneMatch = true
	}
	var doc buildstatus.PublishResponse
	if err := s.decodeBody(w, r, &doc); err != nil {
		return err
	}
	if doc.BuildID == "" {
		doc.BuildID = id
	} else if bodyID, err := buildstatus.NormalizeBuildID(doc.BuildID); err != nil {
		return err
	} else if bodyID != id {
		return redstate.Errorf(redstate.EINVALID, "body buildId %s does not match the path's %s", bodyID, id)
	} else {
		doc.BuildID = bodyID
	}
	b, err := s.builds.Save(r.Context(), &doc, opts)
	if err != nil {
		return buildErr(err)
	}
	setETag(w, b.ETag())
	writeRawJSON(w, http.StatusOK, b.JSON)
	return nil
}

// getBuild returns the stored document byte for byte: GET /v1/builds/{buildId}. 200 with ETag,
// 304 when If-None-Match matches, 404 when missing or expired.
func (s *server) getBuild(w http.ResponseWriter, r *http.Request) error {
	_, b, err := s.pathBuild(r)
	if err != nil {
		return err
	}
	setETag(w, b.ETag())
	if inm := r.Header.Get("If-None-Match"); inm != "" && noneMatches(inm, b.ETag()) {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	writeRawJSON(w, http.StatusOK, b.JSON)
	return nil
}

// headBuild answers HEAD /v1/builds/{buildId}: 200, 304 (If-None-Match matches, as for GET) or
// 404 without body, with the ETag, the
// document's Content-Length and Redstate-TTL-Seconds (seconds left, rounded up).
func (s *server) headBuild(w http.ResponseWriter, r *http.Request) error {
	id, b, err := s.pathBuild(r)
	if err != nil {
		return err
	}
	ttl, err := s.builds.TTL(r.Context(), id)
	if err != nil {
		return buildErr(err)
	}
	h := w.Header()
	setETag(w, b.ETag())
	h.Set("Redstate-TTL-Seconds", strconv.FormatInt(int64(math.Ceil(ttl.Seconds())), 10))
	if inm := r.Header.Get("If-None-Match"); inm != "" && noneMatches(inm, b.ETag()) {
		w.WriteHeader(http.StatusNotModified) // like GET (RFC 9110 section 13.1.2)
		return nil
	}
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b.JSON)))
	w.WriteHeader(http.StatusOK)
	return nil
}

// pathBuild reads the build named by the request path.
func (s *server) pathBuild(r *http.Request) (string, *buildstatus.Build, error) {
	id, err := pathBuildID(r)
	if err != nil {
		return "", nil, err
	}
	b, err := s.builds.Get(r.Context(), id)
	if err != nil {
		return "", nil, buildErr(err)
	}
	return id, b, nil
}

// deleteBuild removes a build: DELETE /v1/builds/{buildId}. 204; If-Match makes it
// conditional (412 when stale); 404 when missing.
func (s *server) deleteBuild(w http.ResponseWriter, r *http.Request) error {
	id, err := pathBuildID(r)
	if err != nil {
		return err
	}
	match, err := s.ifMatch(r, id, true)
	if err != nil {
		return err
	}
	if err := s.builds.Delete(r.Context(), id, match); err != nil {
		return buildErr(err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// patchPlatform changes one platform's result by a JSON merge patch (RFC 7396): PATCH
// /v1/builds/{buildId}/platforms/{platform}. Members the body gives replace the entry's, a null
// member clears one, members it leaves out keep their values; a platform not yet in the build is
// added (its patch needs a status). The body's platform may be omitted and must otherwise equal
// the path's. If-Match makes it conditional. 200 with the new document and its ETag.
func (s *server) patchPlatform(w http.ResponseWriter, r *http.Request) error {
	id, err := pathBuildID(r)
	if err != nil {
		return err
	}
	platform := r.PathValue("platform")
	if err := buildstatus.ValidatePlatform(platform); err != nil {
		return err
	}
	match, err := s.ifMatch(r, id, true)
	if err != nil {
		return err
	}
	var patch map[string]json.RawMessage
	if err := s.decodeBody(w, r, &patch); err != nil {
		return err
	}
	b, err := buildstatus.PatchPlatform(r.Context(), s.builds, id, platform, patch, match)
	if err != nil {
		return buildErr(err)
	}
	setETag(w, b.ETag())
	writeRawJSON(w, http.StatusOK, b.JSON)
	return nil
}
