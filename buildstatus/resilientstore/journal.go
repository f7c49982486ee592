package resilientstore

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// The fallback journal is a write-ahead log of the pending set on local disk. Each change of
// the pending set is one record:
//
//	length  uint32, big endian: bytes of payload
//	crc     uint32, big endian: CRC-32C (Castagnoli) of payload
//	payload JSON journalRecord
//
// Records are appended in the order the changes were made; on replay the last record of an id
// wins. A record that is cut short or fails its checksum can only be the tail of a crash
// mid-append (appends are serialized and every acknowledged one was fsync'ed), so replay stops
// there and the file is truncated to the last good record.

const (
	journalHeaderSize = 8
	// journalMaxRecord bounds a record's payload: a longer length can only be garbage.
	journalMaxRecord = 64 << 20
	// journalCompactSlack is how many superseded records the journal may hold beyond twice the
	// pending set before it is rewritten.
	journalCompactSlack = 256
)

var journalCRC = crc32.MakeTable(crc32.Castagnoli)

// Journal record operations.
const (
	opSave   = "save"
	opDelete = "delete"
	// opClear: the id was written back (or dropped) and is no longer pending. It is not waited
	// for; if a crash loses it, the replayed write is compared with Redis again (newer wins).
	opClear = "clear"
)

// journalRecord is one change of the pending set.
type journalRecord struct {
	// Op is opSave (Doc is the stored value), opDelete (a tombstone at DeletedAt) or opClear.
	Op string `json:"op"`
	// ID is the build id.
	ID string `json:"id"`
	// Doc is the stored JSON value of the build (opSave).
	Doc json.RawMessage `json:"doc,omitempty"`
	// DeletedAt is the tombstone's time (opDelete).
	DeletedAt time.Time `json:"deletedAt,omitzero"`
	// ExpiresAt is when the memory copy expires (opSave); an expired record is not replayed.
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
	// Gen is the pending write's generation in the process that wrote it (informational).
	Gen uint64 `json:"gen"`
}

// errJournalClosed is returned by appends after Close.
var errJournalClosed = errors.New("fallback journal is closed")

// journal is an open journal file. append is called with the store's mutex held (so records
// are in the order of the changes); sync is called without it and batches concurrent callers
// into one fsync (group commit).
//
// Lock order: Store.mu, then journal.syncMu, then journal.mu.
type journal struct {
	path string

	syncMu sync.Mutex // one fsync, truncation or rewrite at a time
	synced uint64     // sequence number of the last record known to be on disk (syncMu)

	mu      sync.Mutex
	f       *os.File // nil once closed
	size    int64    // bytes of whole records in f
	records int      // records in f
	written uint64   // sequence number of the last record appended
	err     error    // sticky: after a failed write or fsync, the file's state is unknown

	unlock func() error // releases the lock file
}

// openJournal opens (creating it and its directory if needed) and locks the journal at path,
// and returns its records. A torn or corrupt tail is truncated; torn reports how many bytes
// were dropped.
func openJournal(path string) (j *journal, recs []journalRecord, torn int64, err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, 0, fmt.Errorf("creating the journal's directory: %w", err)
	}
	unlock, err := lockFile(path + ".lock")
	if err != nil {
		return nil, nil, 0, err
	}
	defer func() {
		if err != nil {
			_ = unlock()
		}
	}()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, nil, 0, err
	}
	defer func() {
		if err != nil {
			_ = f.Close()
		}
	}()
	if err := syncDir(dir); err != nil { // the file's directory entry survives a crash too
		return nil, nil, 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, 0, err
	}
	recs, good, err := readJournal(f)
	if err != nil {
		return nil, nil, 0, err
	}
	if torn = fi.Size() - good; torn > 0 {
		if err := f.Truncate(good); err != nil {
			return nil, nil, 0, fmt.Errorf("truncating the journal's torn tail: %w", err)
		}
		if err := f.Sync(); err != nil {
			return nil, nil, 0, err
		}
	}
	return &journal{path: path, f: f, size: good, records: len(recs), unlock: unlock}, recs, torn, nil
}

// readJournal decodes records from the start of f until its end or the first torn or corrupt
// record, and returns them with the offset just past the last good one.
func readJournal(f *os.File) ([]journalRecord, int64, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, 0, err
	}
	r := bufio.NewReader(f)
	var recs []journalRecord
	var good int64
	var hdr [journalHeaderSize]byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return recs, good, nil
			}
			return nil, 0, err
		}
		n := binary.BigEndian.Uint32(hdr[0:4])
		if n == 0 || n > journalMaxRecord {
			return recs, good, nil
		}
		payload := make([]byte, n)
		if _, err := io.ReadFull(r, payload); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return recs, good, nil
			}
			return nil, 0, err
		}
		if crc32.Checksum(payload, journalCRC) != binary.BigEndian.Uint32(hdr[4:8]) {
			return recs, good, nil
		}
		var rec journalRecord
		if err := json.Unmarshal(payload, &rec); err != nil || rec.ID == "" || (rec.Op != opSave && rec.Op != opDelete && rec.Op != opClear) {
			return recs, good, nil
		}
		recs = append(recs, rec)
		good += journalHeaderSize + int64(n)
	}
}

// encodeRecord frames rec.
func encodeRecord(rec journalRecord) ([]byte, error) {
	payload, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, journalHeaderSize, journalHeaderSize+len(payload))
	binary.BigEndian.PutUint32(buf[0:4], uint32(len(payload)))
	binary.BigEndian.PutUint32(buf[4:8], crc32.Checksum(payload, journalCRC))
	return append(buf, payload...), nil
}

// append writes rec (not yet durable: call sync with the returned sequence number).
func (j *journal) append(rec journalRecord) (uint64, error) {
	buf, err := encodeRecord(rec)
	if err != nil {
		return 0, err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	switch {
	case j.f == nil:
		return 0, errJournalClosed
	case j.err != nil:
		return 0, j.err
	}
	if _, err := j.f.Write(buf); err != nil {
		// Cut a partial record off, or every later record would be lost behind it on replay.
		if terr := j.f.Truncate(j.size); terr != nil {
			j.err = fmt.Errorf("fallback journal unusable after a failed write (%v): %w", err, terr)
		}
		return 0, err
	}
	j.size += int64(len(buf))
	j.records++
	j.written++
	return j.written, nil
}

// sync returns once the record with sequence number seq (and every earlier one) is on disk.
// Concurrent callers share one fsync.
func (j *journal) sync(seq uint64) error {
	j.syncMu.Lock()
	defer j.syncMu.Unlock()
	if j.synced >= seq {
		return nil
	}
	j.mu.Lock()
	f, target, err := j.f, j.written, j.err
	j.mu.Unlock()
	switch {
	case err != nil:
		return err
	case f == nil:
		return errJournalClosed
	}
	if err := f.Sync(); err != nil {
		// After a failed fsync the kernel may have dropped the dirty pages: nothing written
		// since the last good fsync can be trusted, so the journal refuses further writes.
		j.mu.Lock()
		j.err = fmt.Errorf("fallback journal unusable after a failed fsync: %w", err)
		j.mu.Unlock()
		return err
	}
	j.synced = target
	return nil
}

// reset empties the journal: every record in it is obsolete (the pending set is empty).
func (j *journal) reset() error {
	j.syncMu.Lock()
	defer j.syncMu.Unlock()
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil || j.size == 0 {
		return nil
	}
	if err := j.f.Truncate(0); err != nil {
		return err
	}
	j.size, j.records = 0, 0
	j.synced = j.written // what was not synced yet is obsolete too
	if err := j.f.Sync(); err != nil {
		j.err = fmt.Errorf("fallback journal unusable after a failed fsync: %w", err)
		return err
	}
	return nil
}

// rewrite atomically replaces the journal's content by recs (the current pending set), via a
// temporary file, fsync and rename. On failure the old file stays in use (it holds a superset).
func (j *journal) rewrite(recs []journalRecord) (err error) {
	var buf bytes.Buffer
	for _, rec := range recs {
		b, err := encodeRecord(rec)
		if err != nil {
			return err
		}
		buf.Write(b)
	}
	j.syncMu.Lock()
	defer j.syncMu.Unlock()
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return errJournalClosed
	}
	tmp := j.path + ".tmp"
	t, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = t.Close()
			_ = os.Remove(tmp)
		}
	}()
	if _, err := t.Write(buf.Bytes()); err != nil {
		return err
	}
	if err := t.Sync(); err != nil {
		return err
	}
	if err := t.Close(); err != nil {
		return err
	}
	nf, err := os.OpenFile(tmp, os.O_RDWR|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, j.path); err != nil {
		_ = nf.Close()
		return err
	}
	// If the directory fsync fails the rename may not be durable, but either file at the path
	// after a crash holds every pending write: carry on with the new one.
	_ = syncDir(filepath.Dir(j.path))
	_ = j.f.Close()
	j.f, j.size, j.records, j.err = nf, int64(buf.Len()), len(recs), nil
	j.synced = j.written // every record written so far is represented in recs, on disk
	return nil
}

// needsCompaction reports whether the journal holds many more records than pending ids.
func (j *journal) needsCompaction(pending int) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.f != nil && j.records > 2*pending+journalCompactSlack
}

// stats returns the journal's record count and size.
func (j *journal) stats() (records int, size int64) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.records, j.size
}

// close syncs and closes the file and releases its lock.
func (j *journal) close() error {
	j.syncMu.Lock()
	defer j.syncMu.Unlock()
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return nil
	}
	err := j.f.Sync()
	err = errors.Join(err, j.f.Close(), j.unlock())
	j.f = nil
	return err
}

// syncDir fsyncs a directory so that entries created or renamed in it are durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	return errors.Join(err, d.Close())
}
