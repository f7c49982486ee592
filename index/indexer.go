package index

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redstate/redstate"
)

// DefaultDeadLetterMax is how many failed changes the dead-letter list keeps.
const DefaultDeadLetterMax = 10000

// Options configure an Indexer. Zero fields take the defaults stated on them.
type Options struct {
	// Namespace is the deployment's namespace (config namespace), put before every key, the
	// prefix included, so deployments sharing a Redis share no index key (default none).
	Namespace string
	// Prefix is the key prefix (default DefaultPrefix, the seed's "las_im_data_sync").
	Prefix string
	// VersionTTL is how long a deleted row's version key (its tombstone) and a truncate key live
	// after the change that wrote them (default 30 days). A row in the index keeps its version
	// key, which holds its relation, as long as it is there.
	VersionTTL time.Duration
	// DeadLetterMax bounds the dead-letter list (default DefaultDeadLetterMax).
	DeadLetterMax int
	// Cluster says the store is a Redis Cluster: every table must then set HashTag, the only
	// layout in which a row's change is atomic there.
	Cluster bool
	// Debezium says how the Debezium connector feeding the index writes values, for its events
	// without a schema (default DefaultDebeziumSettings).
	Debezium DebeziumSettings
}

// table is a declared table, compiled.
type table struct {
	spec TableSpec
	keys Keys
	// bySignature maps a combination's code set to its index in spec.Dimensions.
	bySignature map[string]int
	stats       *TableStats
	// codec converts the declared columns; dims gives, per dimension and part, the index of the
	// part's column among them (-1: not declared, its text is used as it is).
	codec rowCodec
	dims  [][]int
	// floorKey is keys.Truncated().
	floorKey string
	// keyBytes is the key column when it is declared bytes: its value names the row in the
	// index's form of binary values, whatever the source wrote (nil: the key's text as it comes).
	keyBytes *column
}

// TableStats count a table's changes on this instance since it started.
type TableStats struct {
	// Applied changes took effect; Stale ones were older than the stored version; Failed ones
	// could not be converted (dead-lettered).
	Applied, Stale, Failed atomic.Int64
}

// Indexer applies row changes of the declared tables to a Store and answers queries. It is safe
// for concurrent use.
type Indexer struct {
	store  Store
	opts   Options
	tables map[string]*table // "db.table"
	order  []string
	// skipped counts changes of undeclared tables and DDL since start, unreadable the events
	// that could not be parsed at all (no table to count them on).
	skipped, unreadable atomic.Int64
	// counters are the counts not yet added to the store's shared counters (FlushCounters).
	counters counterLog
	// observeApplied, when set (ObserveApplied), hears every Apply's counts.
	observeApplied func(source string, applied, stale int64)
}

// ObserveApplied makes every Apply tell f how many of its changes were applied and how many
// were stale, with the source its context names (WithSource; "push" when none). Call it before
// the sources run; f must be fast and safe for concurrent use.
func (ix *Indexer) ObserveApplied(f func(source string, applied, stale int64)) { ix.observeApplied = f }

// sourceKey is the context key of WithSource.
type sourceKey struct{}

// WithSource names the source of the changes an Apply with the returned context applies, for
// ObserveApplied: "binlog", "pgoutput:<slot>", "kafka", "stream:<key>", "snapshot".
func WithSource(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, sourceKey{}, name)
}

// sourceOf returns the name WithSource put in ctx, or "push" (the HTTP ingest path).
func sourceOf(ctx context.Context) string {
	if name, ok := ctx.Value(sourceKey{}).(string); ok {
		return name
	}
	return "push"
}

// CountUnreadable counts n events that could not be parsed at all.
func (ix *Indexer) CountUnreadable(n int) {
	ix.unreadable.Add(int64(n))
	ix.counters.record(CounterSet{Unreadable: int64(n)})
}

// CountSkipped counts n changes of undeclared tables (or DDL) skipped without error.
func (ix *Indexer) CountSkipped(n int) {
	ix.skipped.Add(int64(n))
	ix.counters.record(CounterSet{Skipped: int64(n)})
}

// Skipped is how many changes this instance skipped since it started (CountSkipped).
func (ix *Indexer) Skipped() int64 { return ix.skipped.Load() }

// Unreadable is how many events this instance could not parse since it started.
func (ix *Indexer) Unreadable() int64 { return ix.unreadable.Load() }

// New returns an Indexer over store for specs. Errors: EINVALID (a spec, the prefix, a
// duplicate table, a table without HashTag on Cluster).
func New(store Store, specs []TableSpec, opts Options) (*Indexer, error) {
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	if opts.VersionTTL == 0 {
		opts.VersionTTL = DefaultVersionTTL
	}
	if opts.DeadLetterMax == 0 {
		opts.DeadLetterMax = DefaultDeadLetterMax
	}
	opts.Debezium = opts.Debezium.withDefaults()
	if err := opts.Debezium.Validate(); err != nil {
		return nil, err
	}
	if err := ValidatePrefix(opts.Prefix); err != nil {
		return nil, err
	}
	if opts.VersionTTL < MinVersionTTL {
		return nil, redstate.Errorf(redstate.EINVALID, "index version TTL must be at least %s, got %s", MinVersionTTL, opts.VersionTTL)
	}
	ix := &Indexer{store: store, opts: opts, tables: map[string]*table{}}
	for _, s := range specs {
		if err := s.Validate(); err != nil {
			return nil, err
		}
		name := s.DB + "." + s.Table
		if _, dup := ix.tables[name]; dup {
			return nil, redstate.Errorf(redstate.EINVALID, "index table %s is declared twice", name)
		}
		if opts.Cluster && !s.HashTag {
			return nil, redstate.Errorf(redstate.EINVALID,
				"index table %s: on Redis Cluster set hash-tag: true (a row's fil- and index keys must share a slot for its change to be atomic; see docs/index.md)", name)
		}
		t := &table{spec: s, keys: NewKeys(redstate.Prefix(opts.Namespace, opts.Prefix), s.DB, s.Table, s.HashTag), bySignature: map[string]int{},
			stats: &TableStats{}, codec: newRowCodec(s.Columns)}
		t.floorKey = t.keys.Truncated()
		if i := slices.IndexFunc(s.Columns, func(c Column) bool { return c.Name == s.Key }); i >= 0 && t.codec.cols[i].base == TypeBytes {
			t.keyBytes = &t.codec.cols[i]
		}
		for i, d := range s.Dimensions {
			t.bySignature[signature(d)] = i
			idx := make([]int, len(d))
			for j, p := range d {
				idx[j] = slices.IndexFunc(s.Columns, func(c Column) bool { return c.Name == p.Column })
			}
			t.dims = append(t.dims, idx)
		}
		ix.tables[name] = t
		ix.order = append(ix.order, name)
	}
	return ix, nil
}

// Keys returns the keys of a declared table. Errors: ENOTFOUND.
func (ix *Indexer) Keys(db, tbl string) (Keys, error) {
	t, err := ix.table(db, tbl)
	if err != nil {
		return Keys{}, err
	}
	return t.keys, nil
}

// Table returns the spec of a declared table.
func (ix *Indexer) Table(db, tbl string) (TableSpec, bool) {
	t := ix.tables[db+"."+tbl]
	if t == nil {
		return TableSpec{}, false
	}
	return t.spec, true
}

// BlockKeys are the index's keys that belong to no one table: dead letters, counters and the
// sources' keys.
func (ix *Indexer) BlockKeys() BlockKeys {
	return NewBlockKeys(redstate.Prefix(ix.opts.Namespace, ix.opts.Prefix))
}

// Tables returns the declared tables in declaration order.
func (ix *Indexer) Tables() []TableSpec {
	out := make([]TableSpec, len(ix.order))
	for i, n := range ix.order {
		out[i] = ix.tables[n].spec
	}
	return out
}

// Stats returns this instance's counters of a declared table since it started (nil if
// undeclared); SharedCounters has those of every instance.
func (ix *Indexer) Stats(db, tbl string) *TableStats {
	if t := ix.tables[db+"."+tbl]; t != nil {
		return t.stats
	}
	return nil
}

func (ix *Indexer) table(db, tbl string) (*table, error) {
	t := ix.tables[db+"."+tbl]
	if t == nil {
		return nil, redstate.Errorf(redstate.ENOTFOUND, "table %s.%s is not declared in index.tables", db, tbl)
	}
	return t, nil
}

// Result is the outcome of Apply.
type Result struct {
	// Applied, Stale, Skipped (undeclared table) and Failed (conversion error, dead-lettered)
	// count the changes.
	Applied int `json:"applied"`
	Stale   int `json:"stale"`
	Skipped int `json:"skipped"`
	Failed  int `json:"failed"`
	// Errors describe the failed changes (at most 20).
	Errors []string `json:"errors,omitempty"`
	// Truncated counts the row versions truncates set (OpTruncate): rows removed, and tombstones
	// of rows deleted before the truncate renewed at its version.
	Truncated int `json:"truncated,omitempty"`
}

// Apply applies changes, in order, by the seed's steps 1-7 with the version compare-and-set.
// A change of an undeclared table is skipped; a change that cannot be converted (no key, no
// version, a value that does not parse) is dead-lettered with its reason and counted, never
// failing the others. Errors: EUNAVAILABLE (the store; no change after the failing write's
// batch is known to be applied — retrying the whole call is safe, versions make it idempotent).
func (ix *Indexer) Apply(ctx context.Context, changes []Change) (Result, error) {
	var res Result
	delta := CounterSet{Tables: map[TableRef]Counters{}}
	defer func() {
		ix.skipped.Add(delta.Skipped)
		if !delta.empty() {
			ix.counters.record(delta)
		}
		if ix.observeApplied != nil {
			var applied, stale int64
			for _, c := range delta.Tables {
				applied, stale = applied+c.Applied, stale+c.Stale
			}
			if applied+stale > 0 {
				ix.observeApplied(sourceOf(ctx), applied, stale)
			}
		}
	}()
	count := func(t *table, applied, stale, failed int64) {
		t.stats.Applied.Add(applied)
		t.stats.Stale.Add(stale)
		t.stats.Failed.Add(failed)
		ref := TableRef{DB: t.spec.DB, Table: t.spec.Table}
		c := delta.Tables[ref]
		delta.Tables[ref] = Counters{Applied: c.Applied + applied, Stale: c.Stale + stale, Failed: c.Failed + failed}
	}
	writes := make([]RowWrite, 0, len(changes))
	tables := make([]*table, 0, len(changes))
	// flush applies the writes gathered so far, in order.
	flush := func() error {
		if len(writes) == 0 {
			return nil
		}
		outcomes, err := ix.store.Apply(ctx, writes)
		if err != nil {
			return err
		}
		for i, o := range outcomes {
			if o == Applied {
				res.Applied++
				count(tables[i], 1, 0, 0)
			} else {
				res.Stale++
				count(tables[i], 0, 1, 0)
			}
		}
		writes, tables = writes[:0], tables[:0]
		return nil
	}
	// fail counts a change of t refused with err, lists it (the first 20) and dead-letters it;
	// only the dead letter's own failure is returned.
	fail := func(t *table, ch Change, err error) error {
		res.Failed++
		count(t, 0, 0, 1)
		msg := fmt.Sprintf("%s.%s: %s", ch.DB, ch.Table, redstate.ErrorMessage(err))
		if len(res.Errors) < 20 {
			res.Errors = append(res.Errors, msg)
		}
		return ix.deadLetter(ctx, ch, msg)
	}
	// last is the newest write of each row in this call, to catch two different changes that
	// claim one version (the store would keep the first and call the second stale).
	last := make(map[string]RowWrite, len(changes))
	for _, ch := range changes {
		t := ix.tables[ch.DB+"."+ch.Table]
		if t == nil {
			res.Skipped++
			delta.Skipped++
			continue
		}
		if ch.Op == OpTruncate {
			// Every change before the truncate is applied before it, every one after it after.
			if err := flush(); err != nil {
				return res, err
			}
			applied, swept, err := ix.truncate(ctx, t, ch)
			if redstate.IsCode(err, redstate.EINVALID) {
				if derr := fail(t, ch, err); derr != nil {
					return res, derr
				}
				continue
			}
			if err != nil {
				return res, err
			}
			res.Truncated += swept
			if applied {
				res.Applied++
				count(t, 1, 0, 0)
			} else {
				res.Stale++
				count(t, 0, 1, 0)
			}
			continue
		}
		w, err := ix.write(t, ch)
		if err == nil {
			if prev, ok := last[w.VersionKey]; ok && prev.Version == w.Version && !sameWrite(prev, w) {
				err = redstate.Errorf(redstate.EINVALID,
					"row %s: two different changes carry version %s; a version must order a row's changes (see docs/index.md, versions)", w.ID, w.Version)
			} else {
				last[w.VersionKey] = w
			}
		}
		if err != nil {
			if derr := fail(t, ch, err); derr != nil {
				return res, derr
			}
			continue
		}
		writes = append(writes, w)
		tables = append(tables, t)
	}
	return res, flush()
}

// truncateBatch is how many version keys a truncate reads and rewrites per round trip.
const truncateBatch = 500

// truncate applies a truncate of t: it raises the table's truncate key to the truncate's
// version, so that no older change applies from then on, then rewrites every row's version key
// at that version as a delete (each a compare-and-set: a row changed after the truncate keeps
// its newer state). A truncate delivered again (or one older than the stored one) is stale but
// still sweeps, finishing what a crash may have left undone. swept counts the version keys set.
// Errors: EINVALID (no version), EUNAVAILABLE.
func (ix *Indexer) truncate(ctx context.Context, t *table, ch Change) (applied bool, swept int, err error) {
	if ch.Version == "" {
		return false, 0, redstate.Errorf(redstate.EINVALID, "change has no version")
	}
	stamp := changeStamp(ch.Time)
	out, err := ix.store.RaiseFloor(ctx, FloorWrite{Key: t.floorKey, Version: ch.Version, Stamp: stamp, TTL: ix.opts.VersionTTL})
	if err != nil {
		return false, 0, err
	}
	for cursor := ""; ; {
		keys, next, err := ix.store.ScanKeys(ctx, t.keys.VersionPattern(), cursor, truncateBatch)
		if err != nil {
			return false, swept, err
		}
		writes := make([]RowWrite, 0, len(keys))
		for _, k := range keys {
			if id, ok := t.keys.VersionID(k); ok {
				w := t.rowWrite(id, ch.Version, stamp, ix.opts.VersionTTL)
				w.Delete = true
				writes = append(writes, w)
			}
		}
		if len(writes) > 0 {
			outcomes, err := ix.store.Apply(ctx, writes)
			if err != nil {
				return false, swept, err
			}
			for _, o := range outcomes {
				if o == Applied {
					swept++
				}
			}
		}
		if next == "" || next == "0" {
			return out == Applied, swept, nil
		}
		cursor = next
	}
}

// rowWrite is the RowWrite of row id at version v with the table's keys, before its op and
// row are set.
func (t *table) rowWrite(id string, v Version, stamp string, ttl time.Duration) RowWrite {
	return RowWrite{VersionKey: t.keys.Version(id), TablePrefix: t.keys.TablePrefix(), FloorKey: t.floorKey,
		LayoutKey: t.keys.Layout(), ID: id, Version: v, Stamp: stamp, TTL: ttl}
}

// changeStamp is the seed's fil- value for a change of time at: the data change time, or, when
// the source gives none (a native event without "time"), the time it is applied.
func changeStamp(at time.Time) string {
	if at.IsZero() {
		at = time.Now()
	}
	return at.UTC().Format(time.RFC3339Nano)
}

// write computes the store write of ch: steps 3-5 (logical delete, convert, index keys).
func (ix *Indexer) write(t *table, ch Change) (RowWrite, error) {
	if ch.Version == "" {
		return RowWrite{}, redstate.Errorf(redstate.EINVALID, "change has no version")
	}
	if strings.Contains(string(ch.Version), relationSep) {
		// The version key's value is "<version>|<time>|<relation>" (RowValue).
		return RowWrite{}, redstate.Errorf(redstate.EINVALID, "version %q: a version cannot contain %q", ch.Version, relationSep)
	}
	idp := ch.Row[t.spec.Key]
	if idp == nil || *idp == "" {
		return RowWrite{}, redstate.Errorf(redstate.EINVALID, "change has no value for the key column %s", t.spec.Key)
	}
	form := valueForm{enc: ch.Encoding, debezium: &ix.opts.Debezium, decoded: ch.DecodedBytes}
	id := *idp
	if t.keyBytes != nil {
		var err error
		if id, err = t.keyBytes.bytesValue(id, &form); err != nil {
			return RowWrite{}, err
		}
	}
	w := t.rowWrite(id, ch.Version, changeStamp(ch.Time), ix.opts.VersionTTL)
	if ch.Op == OpDelete || t.logicallyDeleted(ch.Row) {
		w.Delete = true
		return w, nil
	}
	if ch.Op != OpUpsert {
		return RowWrite{}, redstate.Errorf(redstate.EINVALID, "unknown change op %q", ch.Op)
	}
	vals, err := t.codec.convert(ch.Row, &form)
	if err != nil {
		return RowWrite{}, err
	}
	if w.Row, err = t.codec.json(vals); err != nil {
		return RowWrite{}, err
	}
	for i, d := range t.spec.Dimensions {
		values := make([]*string, len(d))
		for j, p := range d {
			raw := ch.Row[p.Column]
			if c := t.dims[i][j]; c >= 0 && raw != nil {
				// The key holds the value as the row does: one normalisation for both.
				raw = segment(vals[c], raw)
			}
			values[j] = raw
		}
		w.Keys = append(w.Keys, t.keys.Index(d, values))
	}
	return w, nil
}

// sameWrite reports whether a and b make the same change of one row.
func sameWrite(a, b RowWrite) bool {
	return a.Delete == b.Delete && bytes.Equal(a.Row, b.Row) && slices.Equal(a.Keys, b.Keys)
}

// logicallyDeleted is seed step 3: the delete column present with NULL or "0".
func (t *table) logicallyDeleted(row map[string]*string) bool {
	if t.spec.DeleteColumn == "" {
		return false
	}
	v, present := row[t.spec.DeleteColumn]
	return present && (v == nil || *v == "0")
}

// deadLetter records a change that could not be applied.
func (ix *Indexer) deadLetter(ctx context.Context, ch Change, reason string) error {
	entry, _ := json.Marshal(struct {
		DB      string             `json:"db"`
		Table   string             `json:"table"`
		Op      Op                 `json:"op"`
		Row     map[string]*string `json:"row"`
		Version Version            `json:"version"`
		Reason  string             `json:"reason"`
		Source  string             `json:"source,omitempty"`
		At      time.Time          `json:"at"`
	}{ch.DB, ch.Table, ch.Op, ch.Row, ch.Version, reason, ch.Source, time.Now().UTC()})
	return ix.store.DeadLetter(ctx, ix.DeadLetterKey(), entry, ix.opts.DeadLetterMax)
}

// DeadLetterEvent records an event that could not even be parsed (raw as received) with the
// reason, and counts it as unreadable. Errors: EUNAVAILABLE.
func (ix *Indexer) DeadLetterEvent(ctx context.Context, source string, raw []byte, reason string) error {
	ix.CountUnreadable(1)
	entry, _ := json.Marshal(struct {
		Source string    `json:"source"`
		Raw    string    `json:"raw"`
		Reason string    `json:"reason"`
		At     time.Time `json:"at"`
	}{source, string(raw), reason, time.Now().UTC()})
	return ix.store.DeadLetter(ctx, ix.DeadLetterKey(), entry, ix.opts.DeadLetterMax)
}

// DeadLetterKey is the LIST of changes that could not be applied, newest first.
func (ix *Indexer) DeadLetterKey() string { return ix.BlockKeys().DeadLetter() }

// Query returns the rows of db.tbl matching conds (code → value; every code of one declared
// combination, in any order): one HGETALL. Errors: ENOTFOUND (undeclared table), EINVALID
// (the codes match no combination; the message lists the declared ones), EUNAVAILABLE.
func (ix *Indexer) Query(ctx context.Context, db, tbl string, conds map[string]string) (map[string]json.RawMessage, error) {
	key, err := ix.QueryKey(db, tbl, conds)
	if err != nil {
		return nil, err
	}
	return ix.store.Rows(ctx, key)
}

// QueryPage is Query one page at a time (HSCAN from cursor), for large hashes.
func (ix *Indexer) QueryPage(ctx context.Context, db, tbl string, conds map[string]string, cursor string, count int) (Page, error) {
	key, err := ix.QueryKey(db, tbl, conds)
	if err != nil {
		return Page{}, err
	}
	return ix.store.Scan(ctx, key, cursor, count)
}

// QueryBatch answers several queries of db.tbl in one round trip per node.
func (ix *Indexer) QueryBatch(ctx context.Context, db, tbl string, conds []map[string]string) ([]map[string]json.RawMessage, error) {
	keys := make([]string, len(conds))
	for i, c := range conds {
		k, err := ix.QueryKey(db, tbl, c)
		if err != nil {
			return nil, fmt.Errorf("query %d: %w", i, err)
		}
		keys[i] = k
	}
	return ix.store.RowsBatch(ctx, keys)
}

// QueryKey returns the index key conds select. Errors as Query.
func (ix *Indexer) QueryKey(db, tbl string, conds map[string]string) (string, error) {
	t, err := ix.table(db, tbl)
	if err != nil {
		return "", err
	}
	parts := make([]Part, 0, len(conds))
	for code := range conds {
		parts = append(parts, Part{Code: code})
	}
	i, ok := t.bySignature[signature(parts)]
	if !ok {
		return "", redstate.Errorf(redstate.EINVALID, "conditions %s match no declared combination of %s.%s; declared: %s",
			codesOf(parts), db, tbl, t.combinations())
	}
	d := t.spec.Dimensions[i]
	values := make([]*string, len(d))
	for j, p := range d {
		v := conds[p.Code]
		values[j] = &v
		if c := t.dims[i][j]; c >= 0 {
			// The condition read as the column's values are, so that it names their key.
			col := &t.codec.cols[c]
			n, err := convert(col, &v, &conditionForm)
			if err != nil {
				return "", redstate.Errorf(redstate.EINVALID, "condition %s: %s", p.Code, redstate.ErrorMessage(err))
			}
			if n != nil {
				values[j] = segment(n, &v)
			}
		}
	}
	return t.keys.Index(d, values), nil
}

// combinations lists the declared combinations as "las+cat+bra, las+cat".
func (t *table) combinations() string {
	out := make([]string, len(t.spec.Dimensions))
	for i, d := range t.spec.Dimensions {
		codes := make([]string, len(d))
		for j, p := range d {
			codes[j] = p.Code
		}
		out[i] = strings.Join(codes, "+")
	}
	return strings.Join(out, ", ")
}

func codesOf(parts []Part) string {
	codes := make([]string, len(parts))
	for i, p := range parts {
		codes[i] = p.Code
	}
	sort.Strings(codes)
	return "{" + strings.Join(codes, ", ") + "}"
}
