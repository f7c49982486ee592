// Package buildstatus is the build-status registry (docs/buildstatus.md): the JSON build/publish
// state of every build, kept with a TTL, readable one at a time, in batches, per project or all by
// cursor, updatable one platform at a time without losing concurrent updates, and observable live.
//
// PublishResponse (with a PlatformResult per platform) is the seed's document; a Store keeps
// it and hands back a Build (the stored bytes, ETag and decoded document); PatchPlatform
// changes one platform by a JSON merge patch; Watch streams Events. The package also holds
// the key layout (Keys), validation and Options. Backends: buildstatus/redisstore (Redis
// standalone, Sentinel or Cluster, Lua scripts), buildstatus/memstore (in memory, the
// zero-configuration default) and buildstatus/resilientstore (a circuit breaker around Redis
// with fail-fast or a memory fallback that writes back); buildstatus/storetest is the
// conformance suite they all pass. The Example embeds the registry with a go-redis client;
// docs/buildstatus.md states the keys and guarantees.
package buildstatus

import (
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/redstate/redstate"
)

// PublishResponse is one build's publish state, the registry's build document
// (docs/buildstatus.md). Every field is always present in JSON; absent values are written as null
// (nulls kept).
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

// Build is a stored build: the exact JSON bytes it is stored as, and its ETag and document,
// both computed on first use. Reads hand out the stored bytes without decoding them, so serving a
// build (the HTTP API writes JSON as is) costs no JSON work; call Doc for the typed document.
// A Build is safe for concurrent use; each read returns a new Build.
type Build struct {
	// JSON is the stored value, byte for byte as the backend holds it.
	JSON []byte

	etagOnce sync.Once
	etag     string

	once sync.Once
	doc  *PublishResponse
	err  error
}

// ETag identifies this exact stored value (see ETagOf); computed on first use.
func (b *Build) ETag() string {
	b.etagOnce.Do(func() {
		if b.etag == "" {
			b.etag = ETagOf(b.JSON)
		}
	})
	return b.etag
}

// NewBuild returns the Build of a stored value; the document is decoded lazily by Doc.
func NewBuild(stored []byte) *Build {
	return &Build{JSON: stored}
}

// NewDecodedBuild returns the Build of a stored value whose document the caller already holds
// (a writer that just encoded doc into stored). doc must not be modified afterwards.
func NewDecodedBuild(doc *PublishResponse, stored []byte) *Build {
	b := &Build{JSON: stored, doc: doc}
	b.once.Do(func() {})
	return b
}

// Doc returns the decoded document, decoding it on the first call. The result is this Build's
// own copy: changing it changes neither the store nor other Builds. It fails only if the stored
// value is not a PublishResponse (written by a foreign producer).
func (b *Build) Doc() (*PublishResponse, error) {
	b.once.Do(func() {
		var doc PublishResponse
		if err := json.Unmarshal(b.JSON, &doc); err != nil {
			b.err = fmt.Errorf("stored build is not a PublishResponse: %w", err)
			return
		}
		b.doc = &doc
	})
	return b.doc, b.err
}

// MustDoc is Doc for values known to be valid (written through a Store); it panics otherwise.
func (b *Build) MustDoc() *PublishResponse {
	doc, err := b.Doc()
	if err != nil {
		panic(err)
	}
	return doc
}

// ETagOf returns the entity tag of a stored JSON value: the lowercase hex SHA-1 of its bytes.
// Both backends use it, and the Redis backend's Lua scripts compute the same value with
// redis.sha1hex, so a conditional write compares tags inside Redis atomically without adding
// any field to the seed's stored format.
func ETagOf(stored []byte) string {
	sum := sha1.Sum(stored)
	return hex.EncodeToString(sum[:])
}

// MaxDocumentBytes bounds a stored build document (the encoded JSON), whether it comes from a
// whole-document save or grows by platform updates; it equals the API's default body limit.
const MaxDocumentBytes = 1 << 20

// Encode returns the JSON stored for doc. A document whose JSON exceeds MaxDocumentBytes is
// ETOOLARGE: it is never stored, so one build cannot grow without bound through repeated
// platform updates.
func Encode(doc *PublishResponse) ([]byte, error) {
	if doc == nil {
		return []byte("null"), nil
	}
	b := appendDocument(make([]byte, 0, 1024), doc)
	if len(b) > MaxDocumentBytes {
		return nil, redstate.Errorf(redstate.ETOOLARGE,
			"build document would be %d bytes, the limit is %d (trim errorMessage or platform results)", len(b), MaxDocumentBytes)
	}
	return b, nil
}

// Decode parses a stored JSON value into a Build, decoding the document eagerly so that an
// invalid value is reported now.
func Decode(stored []byte) (*Build, error) {
	b := NewBuild(stored)
	if _, err := b.Doc(); err != nil {
		return nil, err
	}
	return b, nil
}
