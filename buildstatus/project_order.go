package buildstatus

import (
	"encoding/base64"
	"strconv"
	"strings"
	"time"

	"github.com/redstate/redstate"
)

// ProjectScore is a build's position in its project's index: its createdAt as Unix
// milliseconds, or savedAt's when createdAt is null. Listings run from the highest score down,
// ties broken by buildId descending. Every backend orders project listings by this key.
func ProjectScore(doc *PublishResponse, savedAt time.Time) int64 {
	if doc.CreatedAt != nil {
		return doc.CreatedAt.Time.UnixMilli()
	}
	return savedAt.UnixMilli()
}

// ProjectCursor is the position after which a project listing resumes: the last returned
// build's score and id.
type ProjectCursor struct {
	Score   int64
	BuildID string
}

// Before reports whether the entry (score, buildID) comes after the cursor in listing order
// (score descending, then buildId descending), i.e. belongs on a later page.
func (c ProjectCursor) Before(score int64, buildID string) bool {
	if score != c.Score {
		return score < c.Score
	}
	return buildID < c.BuildID
}

// Encode returns the opaque cursor string handed to clients.
func (c ProjectCursor) Encode() string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.Score, 10) + ":" + c.BuildID))
}

// DecodeProjectCursor parses a cursor made by Encode. ok is false for "" (start of listing).
// Errors: EINVALID for anything Encode cannot have produced.
func DecodeProjectCursor(s string) (c ProjectCursor, ok bool, err error) {
	if s == "" {
		return ProjectCursor{}, false, nil
	}
	invalid := redstate.Errorf(redstate.EINVALID, "cursor %q is not a cursor this listing returned", truncate(s))
	raw, decErr := base64.RawURLEncoding.DecodeString(s)
	if decErr != nil {
		return ProjectCursor{}, false, invalid
	}
	scoreText, id, found := strings.Cut(string(raw), ":")
	if !found {
		return ProjectCursor{}, false, invalid
	}
	score, parseErr := strconv.ParseInt(scoreText, 10, 64)
	if parseErr != nil {
		return ProjectCursor{}, false, invalid
	}
	if _, idErr := NormalizeBuildID(id); idErr != nil {
		return ProjectCursor{}, false, invalid
	}
	return ProjectCursor{Score: score, BuildID: id}, true, nil
}

// ValidateLimit returns the effective page size: DefaultListLimit for 0, EINVALID outside
// 1..MaxListLimit.
func ValidateLimit(limit int) (int, error) {
	if limit == 0 {
		return DefaultListLimit, nil
	}
	if limit < 0 || limit > MaxListLimit {
		return 0, redstate.Errorf(redstate.EINVALID, "limit must be between 1 and %d, got %d", MaxListLimit, limit)
	}
	return limit, nil
}
