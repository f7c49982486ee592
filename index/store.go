package index

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"time"

	"github.com/redstate/redstate/internal/keyspace"
)

// DefaultVersionTTL is how long a tombstone (a deleted row's version key) and a truncate key
// are kept after the change that wrote them: 30 days.
const DefaultVersionTTL = 30 * 24 * time.Hour

// MinVersionTTL is the shortest version TTL (index.version-ttl, Options.VersionTTL).
const MinVersionTTL = time.Second

// RowWrite is one row change as the store applies it: the seed's steps 5-7 with the version
// compare-and-set, in one atomic step.
type RowWrite struct {
	// VersionKey is the row's fil- key: its version, change time and relation (RowValue).
	VersionKey string
	// TablePrefix is what every key of the row's table starts with (Keys.TablePrefix): the
	// relation names the row's index keys without it.
	TablePrefix string
	// FloorKey is the table's truncate key (Keys.Truncated): a write whose version is older
	// than the version stored there is stale.
	FloorKey string
	// LayoutKey is the table's layout key (Keys.Layout). While it is absent the table may still
	// hold layout-1 relation keys (kid-), so a row without a version key of layout 2 has its
	// kid- key read and removed.
	LayoutKey string
	// ID is the row's field in the index hashes (its business key).
	ID string
	// Version is the change's version; the write happens only if it is newer than the stored one.
	Version Version
	// Stamp is stored after the version in the version key: the change time, as the seed
	// stores it.
	Stamp string
	// Delete removes the row from every index key it is in, keeping the version key, with an
	// empty relation and TTL, as a tombstone.
	Delete bool
	// Row is the row JSON (upserts).
	Row json.RawMessage
	// Keys are the index keys the row is in after the change (upserts); each starts with
	// TablePrefix.
	Keys []string
	// TTL is a tombstone's time to live (the version key of a row in the index has none).
	TTL time.Duration
}

// Value is the version key's value w writes: RowValue of its version, stamp and relation
// (empty for a delete).
func (w RowWrite) Value() string {
	if w.Delete {
		return RowValue(w.Version, w.Stamp, "")
	}
	return RowValue(w.Version, w.Stamp, EncodeRelation(w.TablePrefix, w.Keys))
}

// Outcome is what the store did with a RowWrite.
type Outcome int

const (
	// Applied: the write took effect.
	Applied Outcome = iota + 1
	// Stale: the stored version is as new or newer; nothing changed.
	Stale
)

// FloorWrite raises a table's truncate key (Keys.Truncated) to a truncate's version.
type FloorWrite struct {
	// Key is the truncate key.
	Key string
	// Version is the truncate's version: written only if newer than the stored one.
	Version Version
	// Stamp is stored after the version ("<version>|<stamp>"): the truncate's time.
	Stamp string
	// TTL is the key's time to live (the version TTL: a truncate is remembered as long as a
	// tombstone).
	TTL time.Duration
}

// Page is a page of an index hash.
type Page struct {
	// Rows maps business id to row JSON.
	Rows map[string]json.RawMessage `json:"rows"`
	// Cursor continues the scan; "0" when done.
	Cursor string `json:"cursor"`
}

// Store keeps the index. The Redis backend (redisindex) and memindex implement it with the same
// semantics, checked by indextest.RunStoreSuite. Implementations are safe for concurrent use.
// Rows returned by Rows, RowsBatch and Scan are read-only: they may share memory with the
// reply (no copy on the query path).
// Errors are *redstate.Error values: EINVALID, EUNAVAILABLE.
type Store interface {
	// Apply applies writes, each atomically (never half a write, never a row in an old and a
	// new index key at once), in order, and returns each one's Outcome. Writes to the same row
	// in one call are applied one after the other.
	Apply(ctx context.Context, writes []RowWrite) ([]Outcome, error)

	// RaiseFloor writes f if its version is newer than the stored one (Applied) and leaves it
	// otherwise (Stale), atomically.
	RaiseFloor(ctx context.Context, f FloorWrite) (Outcome, error)

	// ScanKeys returns a page of about count keys matching pattern (a Keys.VersionPattern) from
	// cursor ("" or "0" to start) and the cursor to continue from ("0" when done). Every key
	// present from the first call to the last is returned at least once.
	ScanKeys(ctx context.Context, pattern, cursor string, count int) (keys []string, next string, err error)

	// Rows returns every row of index key (HGETALL); an absent key is an empty map. It may be
	// answered from a client-side cache that Redis invalidates (bounded staleness) unless ctx
	// comes from FreshRead.
	Rows(ctx context.Context, key string) (map[string]json.RawMessage, error)

	// RowsBatch returns Rows for each key, in order, in one round trip per node (cache: as
	// Rows).
	RowsBatch(ctx context.Context, keys []string) ([]map[string]json.RawMessage, error)

	// Scan returns a page of about count rows of key from cursor ("0" or "" to start; HSCAN).
	Scan(ctx context.Context, key, cursor string, count int) (Page, error)

	// Dump returns every key matching pattern (a Keys.Pattern) with a canonical text of its
	// value, for verification and tests: "string:<value>", "hash:<field>=<value>\n…" sorted
	// (CanonicalHash), or "list:<length>".
	// It is O(keys).
	Dump(ctx context.Context, pattern string) (map[string]string, error)

	// DeadLetter appends entry to the dead-letter list key, keeping the newest max entries.
	DeadLetter(ctx context.Context, key string, entry []byte, max int) error

	// Remove deletes field id from the index hash key (HDEL): verify's repair of an entry no
	// change accounts for.
	Remove(ctx context.Context, key, id string) error

	// AddCounters adds c to the counters kept in key (a hash in Redis, so every instance adds to
	// and reads the same figures), in one atomic step.
	AddCounters(ctx context.Context, key string, c CounterSet) error

	// Counters returns the counters kept in key (empty when there are none). Fields it does
	// not recognize are ignored.
	Counters(ctx context.Context, key string) (CounterSet, error)

	// MigrateRows moves rows of one table to layout 2, each atomically: a row's layout-1
	// relation key (kid-), where it still exists, becomes the relation in its version key
	// (RowValue; a row whose version key expired gets the version "" and m.Stamp, so any change
	// of it is newer), then is deleted. A row already of layout 2 keeps its version key and
	// loses its kid- key. The version key of a row in the index keeps no TTL. moved counts the
	// rows rewritten. Errors: EINVALID (a relation listing a key outside the table),
	// EUNAVAILABLE.
	MigrateRows(ctx context.Context, m LayoutMigration) (moved int, err error)

	// MarkLayout sets a table's layout key (Keys.Layout): from then on the store looks for no
	// kid- key of a row without a version key.
	MarkLayout(ctx context.Context, key string) error

	// LayoutMarked reports whether a table's layout key (Keys.Layout) is set.
	LayoutMarked(ctx context.Context, key string) (bool, error)
}

// LayoutMigration is one step of Indexer.MigrateLayout: rows of one table, by their keys.
type LayoutMigration struct {
	// TablePrefix is the table's Keys.TablePrefix: every key a relation lists starts with it.
	TablePrefix string
	// Stamp is the change time given to a row whose version key expired: the migration's.
	Stamp string
	// VersionKeys and RelationKeys are each row's fil- and kid- keys, in the same order.
	VersionKeys, RelationKeys []string
}

// VersionValue is a truncate key's value: "<version>|<stamp>" (a version key's value of
// layout 1 had this form too).
func VersionValue(v Version, stamp string) string { return string(v) + "|" + stamp }

// Newer reports whether v is newer than the version in stored (a VersionValue or a RowValue).
func Newer(v Version, stored string) bool {
	cur, _, _ := strings.Cut(stored, "|")
	return string(v) > cur
}

// Older reports whether v is older than the version in stored (a VersionValue or a RowValue): a change
// older than a table's truncate (its truncate key) does not apply.
func Older(v Version, stored string) bool {
	cur, _, _ := strings.Cut(stored, "|")
	return string(v) < cur
}

// CanonicalHash is Store.Dump's text of a hash: "hash:" then "field=value" lines sorted, each
// field escaped by keyspace.EscapeSegment (a row id of digits, letters and ._- as it is), so that
// no '=' or line break in an id can be taken for the separators (parseCanonicalHash).
func CanonicalHash(h map[string]json.RawMessage) string {
	lines := make([]string, 0, len(h))
	for f, v := range h {
		lines = append(lines, keyspace.EscapeSegment(f)+"="+string(v))
	}
	sort.Strings(lines)
	return "hash:" + strings.Join(lines, "\n")
}

// parseCanonicalHash reads the body of a CanonicalHash (after "hash:") into field → value.
func parseCanonicalHash(body string) map[string]string {
	h := map[string]string{}
	for _, line := range strings.Split(body, "\n") {
		f, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		if id, ok := keyspace.UnescapeSegment(f); ok {
			h[id] = v
		}
	}
	return h
}

// freshRead marks a context whose reads must not come from a client-side cache.
type freshRead struct{}

// FreshRead returns ctx marked so that Store.Rows and Store.RowsBatch read the stored value,
// never a cached copy: for verification and repair, which must see Redis as it is.
func FreshRead(ctx context.Context) context.Context { return context.WithValue(ctx, freshRead{}, true) }

// IsFreshRead reports whether ctx comes from FreshRead.
func IsFreshRead(ctx context.Context) bool { return ctx.Value(freshRead{}) != nil }
