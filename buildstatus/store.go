package buildstatus

import (
	"context"
	"time"
)

// DefaultTTL is the seed's retention (section 4.1): 30 days after the last write.
const DefaultTTL = 30 * 24 * time.Hour

// Store is the registry's storage contract. Redis (redisstore) and memory (memstore) backends
// implement it with identical semantics, checked by the storetest conformance suite; the
// resilience wrapper implements it too. Implementations must be safe for concurrent use.
//
// Ids passed to a Store must already be canonical (NormalizeBuildID); a Store returns EINVALID
// for any other id and never turns it into a key. Every error is a *redstate.Error, possibly
// wrapped; EUNAVAILABLE means the backend could not be reached and the call may be retried.
type Store interface {
	// Save validates doc and stores it under doc.BuildID with the store's TTL, replacing any
	// previous value and refreshing the TTL. In the same atomic step it adds the build to its
	// project's index (which expires with it) and publishes a "saved" Event.
	// If opts.IfMatch is set, the write happens only if the current value's ETag equals it.
	// If opts.IfNoneMatch is true, the write happens only if no value exists.
	// Errors: EINVALID (bad doc), EPRECONDITION (IfMatch/IfNoneMatch failed), ENOTFOUND (IfMatch
	// given but the build does not exist), ECONFLICT (the stored build belongs to another project:
	// a build's projectId never changes), EUNAVAILABLE.
	Save(ctx context.Context, doc *PublishResponse, opts SaveOptions) (*Build, error)

	// Get returns the stored build: its exact stored bytes and ETag; the document is decoded
	// only when Build.Doc is called. Errors: EINVALID, ENOTFOUND (missing or expired), EUNAVAILABLE.
	Get(ctx context.Context, buildID string) (*Build, error)

	// GetMany returns the builds that exist among ids (at most MaxBatch, duplicates allowed), in
	// one round trip per Redis node and 100 ids. Missing ids are absent from the map.
	// Errors: EINVALID (bad id, too many ids), EUNAVAILABLE.
	GetMany(ctx context.Context, ids []string) (map[string]*Build, error)

	// Exists reports whether the build exists. Errors: EINVALID, EUNAVAILABLE.
	Exists(ctx context.Context, buildID string) (bool, error)

	// TTL returns the time the build has left. Errors: EINVALID, ENOTFOUND, EUNAVAILABLE.
	TTL(ctx context.Context, buildID string) (time.Duration, error)

	// Delete removes the build and its project-index entry atomically and publishes a "deleted"
	// Event. If ifMatch is non-empty the build is removed only if its ETag equals it.
	// Errors: EINVALID, ENOTFOUND, EPRECONDITION, EUNAVAILABLE.
	Delete(ctx context.Context, buildID, ifMatch string) error

	// UpdatePlatform sets platformResults[result.Platform] of an existing build to result (adding
	// the platform to platforms if absent), sets updatedAt to now and refreshes the TTL, without
	// ever losing a concurrent update of another platform of the same build. If ifMatch is
	// non-empty the update applies only to that exact stored value.
	// Errors: EINVALID, ENOTFOUND, EPRECONDITION, ECONFLICT (gave up under extreme contention on
	// this one build; retry), EUNAVAILABLE.
	UpdatePlatform(ctx context.Context, buildID string, result *PlatformResult, ifMatch string) (*Build, error)

	// List returns one page of all builds, in no particular order, resuming after cursor ("" to
	// start). It walks the keyspace with SCAN (never KEYS), so a build saved or deleted during a
	// walk may or may not appear, but a build present for the whole walk appears at least once.
	// limit (1..MaxListLimit) is a hint; a page may hold fewer or slightly more builds, and may be
	// empty while the walk is not done. The walk ends when the returned Page.Cursor is "".
	// Errors: EINVALID (bad cursor or limit), EUNAVAILABLE.
	List(ctx context.Context, cursor string, limit int) (*Page, error)

	// ListProject returns one page of a project's builds, newest createdAt first (ties broken by
	// buildId, descending), resuming after cursor. Expired and deleted builds never appear.
	// Errors: EINVALID (bad project id, cursor or limit), EUNAVAILABLE.
	ListProject(ctx context.Context, projectID, cursor string, limit int) (*Page, error)

	// Watch streams the build's changes until ctx ends, then closes the channel. Changes made by
	// any process sharing the backend are delivered. Events published while the subscriber is
	// slow may be dropped; the stream then carries an Event of type EventGap.
	// Errors: EINVALID, EUNAVAILABLE.
	Watch(ctx context.Context, buildID string) (<-chan Event, error)
}

// SaveOptions are the conditions of a Save.
type SaveOptions struct {
	// IfMatch, when non-empty, is the ETag the current value must have.
	IfMatch string
	// IfNoneMatch requires that the build does not exist yet.
	IfNoneMatch bool
}

// Page is one page of a listing.
type Page struct {
	// Builds are the page's builds.
	Builds []*Build
	// Cursor resumes the listing; "" when the listing is complete.
	Cursor string
}

// Event types.
const (
	// EventSaved: the build was created or replaced (Save, UpdatePlatform).
	EventSaved = "saved"
	// EventDeleted: the build was deleted.
	EventDeleted = "deleted"
	// EventGap: events were dropped because the subscriber fell behind; re-read the build.
	EventGap = "gap"
)

// Event is one change of a build, as published to watchers.
type Event struct {
	// Type is EventSaved, EventDeleted or EventGap.
	Type string `json:"type"`
	// BuildID is the build that changed.
	BuildID string `json:"buildId"`
	// ETag is the new value's ETag (empty for deletions and gaps).
	ETag string `json:"etag,omitempty"`
	// Build is the new stored JSON document (absent for deletions and gaps).
	Build []byte `json:"-"`
}
