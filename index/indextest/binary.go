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

// BinaryEvent is the row of BinaryTable as one event format writes it.
type BinaryEvent struct {
	// Name says which form it is.
	Name string
	// Format is the event format (index.FormatNative, FormatCanal, FormatDebezium).
	Format string
	// Mode is the index.debezium.binary-handling-mode to read it with ("" for the default).
	Mode string
	// Event is the event's JSON.
	Event string
}

// BinaryEvents are the row of BinaryTable(db) (uid 00 FF 80 00, code 00 FF 80, note "x") in
// every form an event format writes binary values in: a native event (standard base64); a Canal
// flat message (one ISO-8859-1 character per byte, the BINARY's trailing zero byte dropped as
// the binary log drops it); Debezium with a schema (typed bytes under binary.handling.mode bytes,
// whatever the setting; typed string under base64, base64-url-safe and hex) and without one in
// every mode.
func BinaryEvents(db string) []BinaryEvent {
	return []BinaryEvent{
		{"native", index.FormatNative, "",
			`{"db":"` + db + `","table":"blobs","op":"insert","row":{"uid":"AP+AAA==","code":"AP+A","note":"x"},"version":{"tsMs":1700000000000}}`},
		{"canal", index.FormatCanal, "",
			`{"data":[{"uid":"\u0000ÿ\u0080","code":"\u0000ÿ\u0080","note":"x"}],"database":"` + db + `","table":"blobs","type":"INSERT",` +
				`"es":1700000000000,"ts":1700000000001,"id":1,"isDdl":false,"mysqlType":{"uid":"binary(4)","code":"varbinary(8)","note":"varchar(8)"},` +
				`"sqlType":{"uid":2004,"code":2004,"note":12},"pkNames":["uid"],"old":null}`},
		{"debezium schema bytes", index.FormatDebezium, index.BinaryBytes, DebeziumBinaryEvent(db, "bytes", "AP+AAA==", "AP+A")},
		{"debezium schema bytes, setting hex", index.FormatDebezium, index.BinaryHex, DebeziumBinaryEvent(db, "bytes", "AP+AAA==", "AP+A")},
		{"debezium schema base64", index.FormatDebezium, index.BinaryBase64, DebeziumBinaryEvent(db, "string", "AP+AAA==", "AP+A")},
		{"debezium schema base64-url-safe", index.FormatDebezium, index.BinaryBase64URLSafe, DebeziumBinaryEvent(db, "string", "AP-AAA==", "AP-A")},
		{"debezium schema hex", index.FormatDebezium, index.BinaryHex, DebeziumBinaryEvent(db, "string", "00ff8000", "00ff80")},
		{"debezium bytes", index.FormatDebezium, index.BinaryBytes, DebeziumBinaryEvent(db, "", "AP+AAA==", "AP+A")},
		{"debezium base64", index.FormatDebezium, index.BinaryBase64, DebeziumBinaryEvent(db, "", "AP+AAA==", "AP+A")},
		{"debezium base64-url-safe", index.FormatDebezium, index.BinaryBase64URLSafe, DebeziumBinaryEvent(db, "", "AP-AAA==", "AP-A")},
		{"debezium hex", index.FormatDebezium, index.BinaryHex, DebeziumBinaryEvent(db, "", "00ff8000", "00ff80")},
	}
}

// DebeziumBinaryEvent is a Debezium MySQL create event of db.blobs with uid and code as written
// (JSON strings) and note "x"; fieldType is their type in the event's schema, "" for an event
// without one. The schema has the shape the connector gives binary columns: type bytes under
// binary.handling.mode bytes, string under base64, base64-url-safe and hex
// (CommonConnectorConfig.BinaryHandlingMode; RecordsStreamProducerIT's schemaAndValueForBytea*).
func DebeziumBinaryEvent(db, fieldType, uid, code string) string {
	payload := `{"before":null,"after":{"uid":"` + uid + `","code":"` + code + `","note":"x"},` +
		`"source":{"db":"` + db + `","table":"blobs","file":"mysql-bin.000003","pos":154,"row":0},"op":"c","ts_ms":1700000000000}`
	if fieldType == "" {
		return payload
	}
	image := func(name string) string {
		return `{"type":"struct","fields":[{"type":"` + fieldType + `","optional":false,"field":"uid"},{"type":"` + fieldType +
			`","optional":true,"field":"code"},{"type":"string","optional":false,"field":"note"}],"optional":true,"name":"` + db +
			`.blobs.Value","field":"` + name + `"}`
	}
	return `{"schema":{"type":"struct","fields":[` + image("before") + `,` + image("after") +
		`,{"type":"string","optional":false,"field":"op"}],"optional":false,"name":"` + db + `.blobs.Envelope"},"payload":` + payload + `}`
}
