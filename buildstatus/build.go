// Package buildstatus is the build-status registry of seed 000: the JSON build/publish state of
// every build, kept with a TTL, readable one at a time, in batches, per project or all by cursor,
// updatable one platform at a time without losing concurrent updates, and observable live.
//
// The package holds the domain types, the Store contract every backend implements, the key
// layout (keys.go) and validation. Backends live in buildstatus/redisstore and
// buildstatus/memstore; buildstatus/storetest is the conformance suite both pass.
package buildstatus

import (
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
)

// PublishResponse is one build's publish state, exactly the seed's section 3.2 model. Every
// field is always present in JSON; absent values are written as null (nulls kept).
type PublishResponse struct {
	BuildID         string                     `json:"buildId"`
	ProjectID       string                     `json:"projectId"`
	Platforms       []string                   `json:"platforms"`
	Status          string                     `json:"status"`
	PlatformResults map[string]*PlatformResult `json:"platformResults"`
	// EstimatedTime is the seed's estimate (minutes); null when unknown.
	EstimatedTime *int64    `json:"estimatedTime"`
	CreatedAt     *DateTime `json:"createdAt"`
	UpdatedAt     *DateTime `json:"updatedAt"`
}

// PlatformResult is the state of one platform's build within a PublishResponse.
type PlatformResult struct {
	Platform     string    `json:"platform"`
	Status       string    `json:"status"`
	Progress     *int      `json:"progress"`
	LogURL       *string   `json:"logUrl"`
	DownloadURL  *string   `json:"downloadUrl"`
	ErrorMessage *string   `json:"errorMessage"`
	StartedAt    *DateTime `json:"startedAt"`
	CompletedAt  *DateTime `json:"completedAt"`
}

// Build is a stored build: the document, the exact JSON bytes it is stored as, and its ETag.
type Build struct {
	// Doc is the decoded document.
	Doc *PublishResponse
	// JSON is the stored value, byte for byte as Redis holds it.
	JSON []byte
	// ETag identifies this exact stored value (see ETagOf).
	ETag string
}

// ETagOf returns the entity tag of a stored JSON value: the lowercase hex SHA-1 of its bytes.
// Both backends use it, and the Redis backend's Lua scripts compute the same value with
// redis.sha1hex, so a conditional write compares tags inside Redis atomically without adding
// any field to the seed's stored format.
func ETagOf(stored []byte) string {
	sum := sha1.Sum(stored)
	return hex.EncodeToString(sum[:])
}

// Encode returns the JSON stored for doc.
func Encode(doc *PublishResponse) ([]byte, error) {
	return json.Marshal(doc)
}

// Decode parses a stored JSON value into a Build.
func Decode(stored []byte) (*Build, error) {
	var doc PublishResponse
	if err := json.Unmarshal(stored, &doc); err != nil {
		return nil, err
	}
	return &Build{Doc: &doc, JSON: stored, ETag: ETagOf(stored)}, nil
}
