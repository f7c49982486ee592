package index

import (
	"context"
	"log/slog"
	"time"
)

// LayoutVersion is the layout of the index's row keys this release writes: 2, a row's relation
// in its version key (RowValue). Layout 1, the seed's, kept it in the kid- key.
const LayoutVersion = 2

// migrateBatch is how many layout-1 relation keys MigrateLayout reads and moves per round trip.
const migrateBatch = 500

// MigrateLayout moves db.tbl to layout 2: it finds the table's layout-1 relation keys (kid-) by
// SCAN and has the store move each into its row's version key (Store.MigrateRows), then sets
// the table's layout key, after which applying a change of a row without a version key reads
// no kid- key. progress, if set, is called with the rows moved so far after each batch.
// already reports a table whose layout key was set before (nothing to do).
//
// It runs beside the sources: each row moves atomically, and a change applied meanwhile moves
// its row itself (the apply script reads and removes a kid- key it finds), so whichever comes
// first moves the row and the other finds it done. SCAN returns every key present from its
// start to its end, and no writer of this release creates a kid- key, so once the scan ends
// none is left. Instances of a release before layout 2 must no longer run: they would write
// kid- keys and layout-1 versions again (see docs/index.md, Layout 2).
// Errors: ENOTFOUND (undeclared table), EINVALID, EUNAVAILABLE.
func (ix *Indexer) MigrateLayout(ctx context.Context, db, tbl string, progress func(moved int)) (moved int, already bool, err error) {
	t, err := ix.table(db, tbl)
	if err != nil {
		return 0, false, err
	}
	if done, err := ix.store.LayoutMarked(ctx, t.keys.Layout()); err != nil || done {
		return 0, done, err
	}
	stamp := changeStamp(time.Time{})
	for cursor := ""; ; {
		keys, next, err := ix.store.ScanKeys(ctx, t.keys.LegacyRelationPattern(), cursor, migrateBatch)
		if err != nil {
			return moved, false, err
		}
		m := LayoutMigration{TablePrefix: t.keys.TablePrefix(), Stamp: stamp}
		for _, k := range keys {
			if id, ok := t.keys.LegacyRelationID(k); ok {
				m.VersionKeys = append(m.VersionKeys, t.keys.Version(id))
				m.RelationKeys = append(m.RelationKeys, k)
			}
		}
		if len(m.RelationKeys) > 0 {
			n, err := ix.store.MigrateRows(ctx, m)
			moved += n
			if err != nil {
				return moved, false, err
			}
			if progress != nil {
				progress(moved)
			}
		}
		if next == "" || next == "0" {
			break
		}
		cursor = next
	}
	return moved, false, ix.store.MarkLayout(ctx, t.keys.Layout())
}

// MigrateLayouts runs MigrateLayout for every declared table, logging each table's progress
// (every 10,000 rows) and result on log: what serve does at start, in the background.
// It stops at the first error.
func (ix *Indexer) MigrateLayouts(ctx context.Context, log *slog.Logger) error {
	for _, name := range ix.order {
		t := ix.tables[name]
		db, tbl := t.spec.DB, t.spec.Table
		logged := 0
		moved, already, err := ix.MigrateLayout(ctx, db, tbl, func(moved int) {
			if moved-logged >= 10000 {
				logged = moved
				log.Info("CDC index layout 2: moving relation keys", "db", db, "table", tbl, "rows", moved)
			}
		})
		if err != nil {
			return err
		}
		if !already {
			log.Info("CDC index layout 2", "db", db, "table", tbl, "moved", moved)
		}
	}
	return nil
}
