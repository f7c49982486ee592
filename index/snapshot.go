package index

import (
	"context"
	"log/slog"
)

// SnapshotDone is the progress of a table whose snapshot is complete. No key of a table can be
// it: it starts with a NUL byte, which no database key column holds in text.
const SnapshotDone = "\x00done"

// SnapshotProgress records how far a paged snapshot copied each table (the last key copied).
// Its writes are fenced: once another runner has taken over the snapshot (a restarted process,
// a second instance), every write of the earlier runner is refused, so progress never moves
// back to an older runner's key and a runner that lost its fence writes nothing more.
type SnapshotProgress interface {
	// Last returns table's recorded progress: the last key copied or SnapshotDone; ok is
	// false when none is recorded.
	Last(ctx context.Context, table string) (last string, ok bool, err error)
	// Record records value (the last key copied, or SnapshotDone) as table's progress. An
	// error refuses it, and the runner stops: Redis failed, or another runner holds the fence
	// now (the source's own error class).
	Record(ctx context.Context, table, value string) error
}

// SnapshotPageReader reads one page of a table in key order: at most limit rows, those whose
// key is above after (every row from the first when first is set), as upsert changes at the
// snapshot's version, and the key of the last row read as text (compared again by the
// database on the next page).
type SnapshotPageReader func(ctx context.Context, after string, first bool, limit int) (changes []Change, last string, err error)

// PagedSnapshot copies tables into an Indexer page by page in key order (keyset pagination,
// never OFFSET), recording the last key copied after every applied page, so that a restarted
// runner resumes after it: the MySQL snapshot (mysqlsource) and the PostgreSQL backfill
// (pgsource). A page applied again after a restart is stale by version, so resuming from the
// last recorded key loses nothing and writes nothing twice.
type PagedSnapshot struct {
	// Indexer receives the rows (required).
	Indexer *Indexer
	// Progress records the progress (required).
	Progress SnapshotProgress
	// PageSize is the rows one page holds (required, positive).
	PageSize int
	// Name names the copy in the log: "<Name> started", "… progress", "… done".
	Name string
	// Copied is told the rows of each applied page (the source's counter); nil: not told.
	Copied func(rows int)
	// Logger receives the copy's progress (required).
	Logger *slog.Logger
}

// Copy copies table, resuming after its recorded progress (nothing when it is SnapshotDone):
// it reads a page with read, applies it, records its last key, until a page holds fewer than
// PageSize rows; then it records SnapshotDone. Errors: read's, the Indexer's (EUNAVAILABLE)
// and Progress's (a lost fence refuses the progress write and stops the copy at once).
func (p PagedSnapshot) Copy(ctx context.Context, table string, read SnapshotPageReader) error {
	last, started, err := p.Progress.Last(ctx, table)
	if err != nil {
		return err
	}
	if last == SnapshotDone {
		p.Logger.Info(p.Name+" already done", "table", table)
		return nil
	}
	copied := 0
	p.Logger.Info(p.Name+" started", "table", table, "resume_after", last)
	for {
		changes, pageLast, err := read(ctx, last, !started, p.PageSize)
		if err != nil {
			return err
		}
		if len(changes) == 0 {
			break
		}
		if _, err := p.Indexer.Apply(WithSource(ctx, "snapshot"), changes); err != nil {
			return err
		}
		copied += len(changes)
		if p.Copied != nil {
			p.Copied(len(changes))
		}
		last, started = pageLast, true
		if err := p.Progress.Record(ctx, table, last); err != nil {
			return err
		}
		p.Logger.Info(p.Name+" progress", "table", table, "rows", copied)
		if len(changes) < p.PageSize {
			break
		}
	}
	p.Logger.Info(p.Name+" done", "table", table, "rows", copied)
	return p.Progress.Record(ctx, table, SnapshotDone)
}
