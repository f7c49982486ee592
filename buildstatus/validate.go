package buildstatus

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/redstate/redstate"
)

// Limits of the registry's inputs.
const (
	// MaxBatch is the most ids one batch read may ask for.
	MaxBatch = 1000
	// MaxListLimit is the largest page a listing returns.
	MaxListLimit = 1000
	// DefaultListLimit is the page size when none is given.
	DefaultListLimit = 100
	// MaxProjectIDBytes bounds a project id.
	MaxProjectIDBytes = 512
	// MaxPlatforms bounds the platforms of one build.
	MaxPlatforms = 64
	// MaxTextBytes bounds free-text fields (status, URLs, error messages).
	MaxTextBytes = 8192
)

// maxNameLen bounds platform and status names.
const maxNameLen = 64

// Byte classes of names, as bit sets: alnum is [A-Za-z0-9]; platform and status characters
// add ". _ -" and "_ -".
const (
	classAlnum    = 1 << iota
	classPlatform // [A-Za-z0-9._-]
	classStatus   // [A-Za-z0-9_-]
)

var nameClass = func() (t [256]uint8) {
	for c := 0; c < 256; c++ {
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' {
			t[c] = classAlnum | classPlatform | classStatus
		}
	}
	t['.'] = classPlatform
	t['_'] = classPlatform | classStatus
	t['-'] = classPlatform | classStatus
	return t
}()

// validPlatform reports whether s matches ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$.
func validPlatform(s string) bool {
	if len(s) == 0 || len(s) > maxNameLen || nameClass[s[0]]&classAlnum == 0 {
		return false
	}
	for i := 1; i < len(s); i++ {
		if nameClass[s[i]]&classPlatform == 0 {
			return false
		}
	}
	return true
}

// validStatus reports whether s matches ^[A-Za-z0-9_-]{1,64}$.
func validStatus(s string) bool {
	if len(s) == 0 || len(s) > maxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if nameClass[s[i]]&classStatus == 0 {
			return false
		}
	}
	return true
}

// IsCanonicalBuildID reports whether id is a UUID in canonical form: 36 characters, lowercase
// hexadecimal digits in 8-4-4-4-12 groups separated by hyphens. Exactly for such ids
// NormalizeBuildID returns id unchanged; the check does not allocate.
func IsCanonicalBuildID(id string) bool {
	if len(id) != len(uuidShape) {
		return false
	}
	// Branch-free: every byte's class must equal its position's; one comparison at the end.
	var diff uint8
	for i := range len(uuidShape) {
		diff |= uuidClass[id[i]] ^ uuidShape[i]
	}
	return diff == 0
}

// uuidClass is a byte's class in a canonical UUID: 1 for 0-9a-f, 2 for '-', 0 otherwise.
var uuidClass = func() (t [256]uint8) {
	for _, c := range "0123456789abcdef" {
		t[c] = 1
	}
	t['-'] = 2
	return t
}()

// uuidShape is the uuidClass each position of a canonical UUID must have (8-4-4-4-12).
var uuidShape = func() (s [36]uint8) {
	for i := range s {
		s[i] = 1
	}
	s[8], s[13], s[18], s[23] = 2, 2, 2, 2
	return s
}()

// NormalizeBuildID validates a build id and returns its canonical form (lowercase, hyphenated
// 36-character UUID). Anything else is an EINVALID error and never becomes a key.
func NormalizeBuildID(id string) (string, error) {
	if IsCanonicalBuildID(id) {
		return id, nil
	}
	if len(id) != 36 {
		return "", redstate.Errorf(redstate.EINVALID, "buildId must be a UUID like 550e8400-e29b-41d4-a716-446655440000, got %q", truncate(id))
	}
	u, err := uuid.Parse(id)
	if err != nil {
		return "", redstate.Errorf(redstate.EINVALID, "buildId must be a UUID like 550e8400-e29b-41d4-a716-446655440000, got %q", truncate(id))
	}
	return u.String(), nil
}

// ValidateProjectID checks a project id: 1 to MaxProjectIDBytes bytes of valid UTF-8 with no
// control characters. Any other text (including '*', '?', '[', ':', '{', '}') is allowed.
func ValidateProjectID(projectID string) error {
	if projectID == "" {
		return redstate.Errorf(redstate.EINVALID, "projectId must not be empty")
	}
	if len(projectID) > MaxProjectIDBytes {
		return redstate.Errorf(redstate.EINVALID, "projectId is %d bytes, the limit is %d", len(projectID), MaxProjectIDBytes)
	}
	if !utf8.ValidString(projectID) {
		return redstate.Errorf(redstate.EINVALID, "projectId must be valid UTF-8")
	}
	if strings.ContainsFunc(projectID, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return redstate.Errorf(redstate.EINVALID, "projectId must not contain control characters")
	}
	if strings.TrimSpace(projectID) != projectID {
		return redstate.Errorf(redstate.EINVALID, "projectId must not be blank or start or end with whitespace (got %q)", truncate(projectID))
	}
	// A project is listed at /v1/projects/{projectId}/builds; these ids could be stored but not
	// addressed there (a path segment "." or ".." is resolved away, an empty one matches nothing).
	if projectID == "." || projectID == ".." || strings.HasPrefix(projectID, "/") || strings.HasSuffix(projectID, "/") {
		return redstate.Errorf(redstate.EINVALID, "projectId must not be \".\" or \"..\" or start or end with \"/\" (got %q): it could not be listed by URL", truncate(projectID))
	}
	return nil
}

// ValidatePlatform checks a platform name: 1-64 characters of [A-Za-z0-9._-], starting with a
// letter or digit ("android", "ios", "h5", "wechat-mp").
func ValidatePlatform(platform string) error {
	if !validPlatform(platform) {
		return redstate.Errorf(redstate.EINVALID, "platform must be 1-64 characters of A-Z a-z 0-9 . _ - (got %q)", truncate(platform))
	}
	return nil
}

// Validate checks a whole document before it is stored and normalizes its buildId. It returns
// EINVALID with a message naming the first offending field.
func Validate(doc *PublishResponse) error {
	if doc == nil {
		return redstate.Errorf(redstate.EINVALID, "body must be a JSON object")
	}
	id, err := NormalizeBuildID(doc.BuildID)
	if err != nil {
		return err
	}
	doc.BuildID = id
	if err := ValidateProjectID(doc.ProjectID); err != nil {
		return err
	}
	if err := validateStatus("status", doc.Status); err != nil {
		return err
	}
	if len(doc.Platforms) > MaxPlatforms {
		return redstate.Errorf(redstate.EINVALID, "at most %d platforms, got %d", MaxPlatforms, len(doc.Platforms))
	}
	for _, p := range doc.Platforms {
		if err := ValidatePlatform(p); err != nil {
			return err
		}
	}
	if len(doc.PlatformResults) > MaxPlatforms {
		return redstate.Errorf(redstate.EINVALID, "at most %d platformResults, got %d", MaxPlatforms, len(doc.PlatformResults))
	}
	for name, r := range doc.PlatformResults {
		if err := ValidatePlatform(name); err != nil {
			return err
		}
		if r == nil {
			continue
		}
		if err := ValidatePlatformResult(r); err != nil {
			return err
		}
		if r.Platform != name {
			return redstate.Errorf(redstate.EINVALID, "platformResults[%q].platform is %q, want %q", name, r.Platform, name)
		}
	}
	if doc.EstimatedTime != nil && *doc.EstimatedTime < 0 {
		return redstate.Errorf(redstate.EINVALID, "estimatedTime must not be negative")
	}
	return nil
}

// ValidatePlatformResult checks one platform result (its Platform field included).
func ValidatePlatformResult(r *PlatformResult) error {
	if err := ValidatePlatform(r.Platform); err != nil {
		return err
	}
	if !validStatus(r.Status) {
		return statusError("platformResults."+r.Platform+".status", r.Status)
	}
	if r.Progress != nil && (*r.Progress < 0 || *r.Progress > 100) {
		return redstate.Errorf(redstate.EINVALID, "progress must be between 0 and 100, got %d", *r.Progress)
	}
	texts := [...]struct {
		field string
		v     *string
	}{{"logUrl", r.LogURL}, {"downloadUrl", r.DownloadURL}, {"errorMessage", r.ErrorMessage}}
	for _, t := range texts {
		if t.v != nil && len(*t.v) > MaxTextBytes {
			return redstate.Errorf(redstate.EINVALID, "%s is %d bytes, the limit is %d", t.field, len(*t.v), MaxTextBytes)
		}
	}
	for _, u := range texts[:2] {
		if u.v != nil {
			if err := validateLink(u.field, *u.v); err != nil {
				return err
			}
		}
	}
	return nil
}

// validateLink checks a logUrl or downloadUrl: a relative reference (the seed's
// "550e8400.../android/app.apk") or an absolute http or https URL with a host. Other schemes
// (javascript:, data:, file:), scheme-relative "//host" references, whitespace and control
// characters are refused, so a stored link is safe to render as a link.
func validateLink(field, v string) error {
	if v == "" {
		return nil
	}
	bad := func(why string) error {
		return redstate.Errorf(redstate.EINVALID, "%s must be a relative path or an http(s) URL: %s (got %q)", field, why, truncate(v))
	}
	if hasSpaceOrControl(v) {
		return bad("it contains whitespace or control characters")
	}
	if strings.HasPrefix(v, "//") || strings.HasPrefix(v, `\\`) || strings.HasPrefix(v, `/\`) {
		return bad("a scheme-relative reference may point to any host")
	}
	// The scheme, when there is one, ends at a ':' before any '/', '?' or '#' (RFC 3986 4.2).
	end := strings.IndexAny(v, ":/?#")
	if end < 0 || v[end] != ':' {
		return nil // a relative reference
	}
	scheme := v[:end]
	if !strings.EqualFold(scheme, "http") && !strings.EqualFold(scheme, "https") {
		return bad("scheme " + strconv.Quote(scheme) + " is not allowed")
	}
	rest, ok := strings.CutPrefix(v[end+1:], "//")
	if host, _, _ := strings.Cut(rest, "/"); !ok || host == "" || host[0] == '?' || host[0] == '#' {
		return bad("an absolute URL needs a host")
	}
	return nil
}

func validateStatus(field, status string) error {
	if !validStatus(status) {
		return statusError(field, status)
	}
	return nil
}

func statusError(field, status string) error {
	return redstate.Errorf(redstate.EINVALID, "%s must be 1-64 characters of A-Z a-z 0-9 _ - such as IN_PROGRESS (got %q)", field, truncate(status))
}

func truncate(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// hasSpaceOrControl reports whether s holds a space, an ASCII control character or any Unicode
// white space. ASCII bytes are checked without decoding (links are mostly ASCII; this runs on
// every save).
func hasSpaceOrControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c == 0x7f {
			return true
		} else if c >= utf8.RuneSelf {
			return strings.ContainsFunc(s[i:], func(r rune) bool { return r <= ' ' || r == 0x7f || unicode.IsSpace(r) })
		}
	}
	return false
}
