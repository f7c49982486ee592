package index

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redstate/redstate"
)

// Op is what a change did to a row.
type Op string

// Change operations. A snapshot row (backfill, Debezium "r") is an OpUpsert. OpTruncate
// empties the table: every row whose version is older than the truncate's leaves the index, and
// no change older than it applies afterwards (its Row is unused).
const (
	OpUpsert   Op = "upsert"
	OpDelete   Op = "delete"
	OpTruncate Op = "truncate"
)

// Version orders the changes of one row totally. It is an opaque string whose byte order is
// the change order, so the store compares versions without knowing the source:
//
//	p<commit LSN 16 hex><change LSN 16 hex>      PostgreSQL (a change's own LSN alone
//	                                              interleaves across transactions)
//	m<binlog file number 8 hex><pos 16 hex><row 8 hex>  MySQL binlog (Debezium file/pos/row)
//	t<event ms 16 hex><batch id 16 hex><delivery position 16 hex><row 8 hex>
//	                                              time-ordered sources (Canal es + message id)
//	k<offset 16 hex><row 8 hex>                   a log partition (Kafka) ordering what gives no
//	                                              source position (see LogVersion)
//
// Versions of different kinds are not comparable: a table is fed by one kind of source.
type Version string

// PostgresVersion is the version of a PostgreSQL change: its transaction's commit LSN, then its
// own LSN. A snapshot row read at LSN s has PostgresVersion(s, 0): every change committed after
// the snapshot is newer.
func PostgresVersion(commitLSN, lsn uint64) Version {
	return Version(fmt.Sprintf("p%016x%016x", commitLSN, lsn))
}

// BinlogVersion is the version of a MySQL binlog row event: the binlog file's sequence number
// (mysql-bin.000042 → 42), the event position and the row's index in the event.
func BinlogVersion(file uint32, pos uint64, row uint32) Version {
	return Version(fmt.Sprintf("m%08x%016x%08x", file, pos, row))
}

// TimeVersion is the version of a source that gives only an event time (ms) and a batch id
// (Canal's flat-message id, shared by every message of one Canal batch): the message's delivery
// position (its place in the stream the source delivered it in: index in a POST plus its
// offset, line of a replay file, Redis Streams entry id, Kafka offset) orders the messages of one
// batch, then the row's index in the message. Two changes of a row with equal time, batch,
// position and row are the same change.
func TimeVersion(ms int64, batch, position uint64, row uint32) Version {
	if ms < 0 {
		ms = 0
	}
	return Version(fmt.Sprintf("t%016x%016x%016x%08x", uint64(ms), batch, position, row))
}

// ParseLSN parses PostgreSQL's "X/Y" LSN text.
func ParseLSN(s string) (uint64, error) {
	hi, lo, ok := strings.Cut(s, "/")
	if !ok {
		return 0, redstate.Errorf(redstate.EINVALID, "LSN %q is not X/Y", s)
	}
	h, err1 := strconv.ParseUint(hi, 16, 32)
	l, err2 := strconv.ParseUint(lo, 16, 32)
	if err1 != nil || err2 != nil {
		return 0, redstate.Errorf(redstate.EINVALID, "LSN %q is not X/Y in hex", s)
	}
	return h<<32 | l, nil
}

// FormatLSN formats an LSN as PostgreSQL's "X/Y".
func FormatLSN(lsn uint64) string { return fmt.Sprintf("%X/%X", lsn>>32, lsn&0xffffffff) }

// Change is one row change of a declared table.
type Change struct {
	// DB and Table name the declared table.
	DB    string
	Table string
	// Op is OpUpsert (insert, update, snapshot) or OpDelete.
	Op Op
	// Row holds the row's column values as text (nil: SQL NULL) after the change; for a delete
	// only the key column is needed.
	Row map[string]*string
	// Version orders the change among the row's changes (required).
	Version Version
	// Time is when the change happened at the source (the seed's 数据变更时间); zero when the
	// source gives none, and the change is then stamped with the time it is applied.
	Time time.Time
	// Encoding says how Row's values are written: EncodingText (the zero value) unless the
	// change was read from an event format or a source that writes some values otherwise.
	Encoding Encoding
	// DecodedBytes are, for EncodingDebeziumSchema, the columns whose values the event's schema
	// typed bytes and that were decoded to their bytes.
	DecodedBytes []string
	// Source says where the change was read (e.g. "kafka:orders/3@1234": topic, partition,
	// offset), recorded with the change when it is dead-lettered; empty when the caller gives
	// none.
	Source string
}

// Str returns a pointer to s, for building Change.Row.
func Str(s string) *string { return &s }

// Encoding says how a Change's values are written. Every source writes most values as text in
// their usual form; they differ in how they write binary values (a bytes column) and in
// Debezium's numbers without a schema.
type Encoding uint8

const (
	// EncodingText is the values as text in their usual form, a binary value as its bytes (the
	// MySQL binlog source and its snapshot; changes built by callers).
	EncodingText Encoding = iota
	// EncodingDebezium is the values of a Debezium event without a schema, as the JSON
	// converter wrote them: the index's DebeziumSettings and the declared column types say how
	// to read them (a binary value: by DebeziumSettings.BinaryHandlingMode).
	EncodingDebezium
	// EncodingDebeziumSchema is a Debezium event read by its schema: a value the schema typed
	// bytes is its bytes (Change.DecodedBytes names them); a string in a bytes column is a
	// binary value written as DebeziumSettings.BinaryHandlingMode says (the connector's
	// base64, base64-url-safe and hex modes give binary columns the schema type string).
	EncodingDebeziumSchema
	// EncodingNative is the values of a native event (FormatNative) or of a JSONL snapshot: a
	// binary value is standard base64, the form the index stores it in.
	EncodingNative
	// EncodingCanal is the values of a Canal flat message: a binary value is a string of one
	// character per byte, U+0000..U+00FF (Canal decodes BINARY, VARBINARY and BLOB as
	// ISO-8859-1).
	EncodingCanal
	// EncodingPostgres is the values of PostgreSQL's text output (pgoutput's text format, the
	// backfill's and verify's row_to_json): a binary value is bytea's text, "\x" and hex digits
	// (bytea_output hex, the default) or the escape format.
	EncodingPostgres
	// EncodingWal2JSON is the values of the wal2json source: a binary value is hex digits, a
	// bytea's hex text without its "\x" (wal2json cuts it off; the source reads in hex).
	EncodingWal2JSON
)
