package indextest

import (
	"context"
	"strings"
	"testing"

	"github.com/redstate/redstate/index"
)

// The binary value every source's test writes: one that is not UTF-8, in a VARBINARY (code) and,
// with a trailing zero byte, in a BINARY(4) key (uid), and how the index must hold them.
const (
	// BinaryCode is the code column's bytes, 0x00 0xFF 0x80.
	BinaryCode = "\x00\xff\x80"
	// BinaryUID is the uid key's bytes, 0x00 0xFF 0x80 0x00 (a BINARY(4): the binary log drops
	// the trailing zero byte).
	BinaryUID = "\x00\xff\x80\x00"
	// BinaryCodeText is BinaryCode as the index keeps it, standard base64: the query condition.
	BinaryCodeText = "AP+A"
	// BinaryUIDText is BinaryUID as the index keeps it: the row's id.
	BinaryUIDText = "AP+AAA=="
	// BinaryRowJSON is the stored row.
	BinaryRowJSON = `{"code":"AP+A","note":"x","uid":"AP+AAA=="}`
	// BinaryKeySuffix ends the index key of the row: the base64 escaped as every key segment is.
	BinaryKeySuffix = ":blobs:code-AP%2BA"
)

// BinaryTable declares db.blobs: keyed by uid (bytes(4), a BINARY(4)), indexed by code (bytes, a
// VARBINARY), with a text note.
func BinaryTable(db string) index.TableSpec {
	return index.TableSpec{DB: db, Table: "blobs", Key: "uid",
		Columns:    []index.Column{{Name: "uid", Type: "bytes(4)"}, {Name: "code", Type: "bytes?"}, {Name: "note", Type: index.TypeString}},
		Dimensions: [][]index.Part{{{Code: "code", Column: "code"}}}}
}

// CheckBinaryRow fails t unless ix holds db.blobs' row as every source must: BinaryRowJSON under
// the id BinaryUIDText, in the index key the condition code=BinaryCodeText names, whose segment
// is BinaryKeySuffix.
func CheckBinaryRow(t testing.TB, ix *index.Indexer, db string) {
	t.Helper()
	conds := map[string]string{"code": BinaryCodeText}
	key, err := ix.QueryKey(db, "blobs", conds)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(key, BinaryKeySuffix) {
		t.Errorf("index key %q, want it to end in %q", key, BinaryKeySuffix)
	}
	rows, err := ix.Query(context.Background(), db, "blobs", conds)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || string(rows[BinaryUIDText]) != BinaryRowJSON {
		t.Errorf("rows of %s: %s, want {%q: %s}", key, rows, BinaryUIDText, BinaryRowJSON)
	}
}
