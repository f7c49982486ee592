package index_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/indextest"
	"github.com/redstate/redstate/index/memindex"
)

// binaryIndex returns a memory index of indextest.BinaryTable("shop") read with dbz.
func binaryIndex(t *testing.T, dbz index.DebeziumSettings) *index.Indexer {
	t.Helper()
	ix, err := index.New(memindex.New(), []index.TableSpec{indextest.BinaryTable("shop")}, index.Options{Debezium: dbz})
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

// applyEvent parses one event in format and applies it to ix, returning the result.
func applyEvent(t *testing.T, ix *index.Indexer, format, event string) index.Result {
	t.Helper()
	p, err := index.ParseEventList(format, []json.RawMessage{json.RawMessage(event)}, 0)
	if err != nil || len(p.Errors) > 0 {
		t.Fatalf("parse %s: %v %v", event, err, p.Errors)
	}
	res, err := ix.Apply(context.Background(), p.Changes)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestBytes_EverySourceFormOneRow: the bytes 00 FF 80 (not UTF-8) in a bytes column, and 00 FF
// 80 00 in a BINARY(4) key, written the way each source writes binary values, end as one stored
// row (standard base64, "AP+A") under one index key and one id: every event format's form
// (indextest.BinaryEvents: native, Canal, Debezium with and without a schema in every
// binary.handling.mode), the MySQL binary log's bytes (its trailing zero byte dropped),
// PostgreSQL's bytea text in its hex and escape formats, and wal2json's bare hex.
func TestBytes_EverySourceFormOneRow(t *testing.T) {
	for _, e := range indextest.BinaryEvents("shop") {
		t.Run(e.Name, func(t *testing.T) {
			ix := binaryIndex(t, index.DebeziumSettings{BinaryHandlingMode: e.Mode})
			if res := applyEvent(t, ix, e.Format, e.Event); res.Applied != 1 {
				t.Fatalf("result %+v", res)
			}
			indextest.CheckBinaryRow(t, ix, "shop")
		})
	}
	for _, c := range []struct {
		name      string
		enc       index.Encoding
		uid, code string
	}{
		{"binlog bytes", index.EncodingText, "\x00\xff\x80", indextest.BinaryCode},
		{"postgres hex", index.EncodingPostgres, `\x00ff8000`, `\x00FF80`},
		{"postgres escape", index.EncodingPostgres, `\000\377\200\000`, `\000\377\200`},
		{"wal2json", index.EncodingWal2JSON, "00ff8000", "00ff80"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ix := binaryIndex(t, index.DebeziumSettings{})
			res, err := ix.Apply(context.Background(), []index.Change{{DB: "shop", Table: "blobs", Op: index.OpUpsert, Version: index.BinlogVersion(3, 154, 0),
				Encoding: c.enc, Row: map[string]*string{"uid": index.Str(c.uid), "code": index.Str(c.code), "note": index.Str("x")}}})
			if err != nil || res.Applied != 1 {
				t.Fatalf("result %+v %v", res, err)
			}
			indextest.CheckBinaryRow(t, ix, "shop")
		})
	}
}

// TestBytes_DebeziumUpstreamValues: the values Debezium's own tests assert for X'010203' in each
// binary.handling.mode (BinlogBinaryModeIT; RecordsStreamProducerIT's schemaAndValueForBytea*:
// bytes {1,2,3} typed bytes, "AQID" under base64 and base64-url-safe, "010203" under hex, typed
// string) are all stored "AQID", with and without the schema.
func TestBytes_DebeziumUpstreamValues(t *testing.T) {
	for _, c := range []struct{ mode, fieldType, uid, value string }{
		{index.BinaryBytes, "bytes", "AAAAAQ==", "AQID"},
		{index.BinaryBase64, "string", "AAAAAQ==", "AQID"},
		{index.BinaryBase64URLSafe, "string", "AAAAAQ==", "AQID"},
		{index.BinaryHex, "string", "00000001", "010203"},
	} {
		for _, schema := range []string{c.fieldType, ""} {
			ix := binaryIndex(t, index.DebeziumSettings{BinaryHandlingMode: c.mode})
			if res := applyEvent(t, ix, index.FormatDebezium, indextest.DebeziumBinaryEvent("shop", schema, c.uid, c.value)); res.Applied != 1 {
				t.Fatalf("%s %q: %+v", c.mode, schema, res)
			}
			rows := rowsOf(t, ix, "shop", "blobs", map[string]string{"code": "AQID"})
			if got := rows["AAAAAQ=="]["code"]; got != "AQID" {
				t.Errorf("%s (schema type %q): code %v, want AQID", c.mode, schema, got)
			}
		}
	}
}

// TestBytes_CanalUpstreamValue: TiCDC's documented Canal-JSON example of a VARBINARY (see
// testdata/canal/SOURCE.md): the 16 bytes 5 7 10 15 36 50 43 99 120 60 38 255 254 45 55 70,
// written one ISO-8859-1 character per byte as Canal writes BINARY, VARBINARY and BLOB, are
// stored as their standard base64.
func TestBytes_CanalUpstreamValue(t *testing.T) {
	spec := index.TableSpec{DB: "test", Table: "t", Key: "id",
		Columns:    []index.Column{{Name: "id", Type: index.TypeLong}, {Name: "c_varbinary", Type: index.TypeBytes}},
		Dimensions: [][]index.Part{{{Code: "vb", Column: "c_varbinary"}}}}
	ix := fixtureIndex(t, spec, index.Options{}, index.FormatCanal, []json.RawMessage{fixtureEvent(t, "canal", "ticdc-canal-json-varbinary.json")})
	want := base64.StdEncoding.EncodeToString([]byte{5, 7, 10, 15, 36, 50, 43, 99, 120, 60, 38, 255, 254, 45, 55, 70})
	rows := rowsOf(t, ix, "test", "t", map[string]string{"vb": want})
	if rows["2"]["c_varbinary"] != want {
		t.Fatalf("rows %v, want c_varbinary %s", rows, want)
	}
}

// TestBytes_DebeziumFixtures: genuine Debezium events: floodplain's PostgreSQL photo row with its
// schema (data typed bytes: a JPEG) is stored as the base64 the connector wrote, which decodes to
// FF D8 FF E0; RisingWave's PostgreSQL event without a schema (o_bytea "ASNFZ4mrze8=", the
// bytes 01 23 45 67 89 AB CD EF its test asserts) is stored so under bytes, the connector's
// default, and refused under hex, which it is not.
func TestBytes_DebeziumFixtures(t *testing.T) {
	photo := fixtureEvent(t, "debezium", "floodplain-photo.json")
	var env struct {
		Payload struct {
			After map[string]any `json:"after"`
		} `json:"payload"`
	}
	if err := json.Unmarshal(photo, &env); err != nil {
		t.Fatal(err)
	}
	written, _ := env.Payload.After["data"].(string)
	ch := parseOne(t, photo)
	ch.DB, ch.Table = "test-gen5", "document" // a 0.x event: its source names the server alone
	spec := index.TableSpec{DB: ch.DB, Table: ch.Table, Key: "documentid",
		Columns:    []index.Column{{Name: "documentid", Type: index.TypeInt}, {Name: "data", Type: index.TypeBytes}},
		Dimensions: [][]index.Part{{{Code: "id", Column: "documentid"}}}}
	ix, err := index.New(memindex.New(), []index.TableSpec{spec}, index.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := ix.Apply(context.Background(), []index.Change{ch}); err != nil || res.Applied != 1 {
		t.Fatalf("photo: %+v %v", res, err)
	}
	stored, _ := rowsOf(t, ix, ch.DB, ch.Table, map[string]string{"id": "15"})["15"]["data"].(string)
	jpeg, err := base64.StdEncoding.DecodeString(stored)
	if err != nil || stored != written || len(jpeg) < 4 || string(jpeg[:4]) != "\xff\xd8\xff\xe0" {
		t.Fatalf("photo data stored %.20q… (%v), written %.20q…", stored, err, written)
	}

	other := fixtureEvent(t, "debezium", "risingwave-postgres-other.json")
	spec = index.TableSpec{DB: "test", Table: "orders", Key: "o_key",
		Columns:    []index.Column{{Name: "o_key", Type: index.TypeInt}, {Name: "o_bytea", Type: index.TypeBytes}},
		Dimensions: [][]index.Part{{{Code: "b", Column: "o_bytea"}}}}
	ix = fixtureIndex(t, spec, index.Options{}, index.FormatDebezium, []json.RawMessage{other})
	rows := rowsOf(t, ix, "test", "orders", map[string]string{"b": "ASNFZ4mrze8="})
	if len(rows) != 1 {
		t.Fatalf("o_bytea key rows %v", rows)
	}
	for _, r := range rows {
		if b, _ := base64.StdEncoding.DecodeString(r["o_bytea"].(string)); string(b) != "\x01\x23\x45\x67\x89\xab\xcd\xef" {
			t.Fatalf("o_bytea %v", r["o_bytea"])
		}
	}
	hexIx, err := index.New(memindex.New(), []index.TableSpec{spec}, index.Options{Debezium: index.DebeziumSettings{BinaryHandlingMode: index.BinaryHex}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := hexIx.Apply(context.Background(), []index.Change{parseOne(t, other)})
	if err != nil || res.Failed != 1 || !strings.Contains(res.Errors[0], "is not hex (Debezium binary.handling.mode hex)") {
		t.Fatalf("o_bytea read as hex: %+v %v", res, err)
	}
}

// TestBytes_BadInputNamesTheFix: a value a bytes column cannot read fails its change alone, with
// the form expected; a string column given bytes that are not UTF-8 names the bytes type; a
// schema's string in a bytes column under binary.handling.mode bytes names the setting; a query
// condition whose '+' a URL turned into a space says so.
func TestBytes_BadInputNamesTheFix(t *testing.T) {
	ix := binaryIndex(t, index.DebeziumSettings{})
	for _, c := range []struct {
		format, event, want string
	}{
		{index.FormatNative, `{"db":"shop","table":"blobs","op":"insert","row":{"uid":"AP+AAA==","code":"AP+A!","note":"x"},"version":{"tsMs":1}}`,
			`column code (bytes?): "AP+A!" is not standard base64`},
		{index.FormatNative, `{"db":"shop","table":"blobs","op":"insert","row":{"uid":"AP+AAAA=","code":"AP+A","note":"x"},"version":{"tsMs":1}}`,
			`column uid (bytes(4)): "AP+AAAA=" has 5 bytes, more than the column's 4`},
		{index.FormatCanal, `{"data":[{"uid":"AAAA","code":"€","note":"x"}],"database":"shop","table":"blobs","type":"INSERT","es":1,"id":1,"isDdl":false}`,
			`is not Canal's text of a binary value`},
		{index.FormatDebezium, indextest.DebeziumBinaryEvent("shop", "string", "AP+AAA==", "AP+A"),
			"set index.debezium.binary-handling-mode to the connector's mode"},
	} {
		p, err := index.ParseEventList(c.format, []json.RawMessage{json.RawMessage(c.event)}, 0)
		if err != nil || len(p.Errors) > 0 {
			t.Fatalf("parse: %v %v", err, p.Errors)
		}
		res, err := ix.Apply(context.Background(), p.Changes)
		if err != nil || res.Failed != 1 || !strings.Contains(res.Errors[0], c.want) {
			t.Errorf("%s: %+v %v; want an error containing %q", c.event, res, err, c.want)
		}
	}
	if _, err := ix.QueryKey("shop", "blobs", map[string]string{"code": "AP A"}); err == nil || !strings.Contains(err.Error(), "write it %2B") {
		t.Errorf("condition with a space: %v", err)
	}

	str, err := index.New(memindex.New(), []index.TableSpec{{DB: "shop", Table: "blobs", Key: "id",
		Columns:    []index.Column{{Name: "id", Type: index.TypeLong}, {Name: "code", Type: index.TypeString}},
		Dimensions: [][]index.Part{{{Code: "code", Column: "code"}}}}}, index.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := str.Apply(context.Background(), []index.Change{{DB: "shop", Table: "blobs", Op: index.OpUpsert, Version: index.BinlogVersion(1, 4, 0),
		Row: map[string]*string{"id": index.Str("1"), "code": index.Str(indextest.BinaryCode)}}})
	if err != nil || res.Failed != 1 || !strings.Contains(res.Errors[0], "is not UTF-8: declare a binary column bytes") {
		t.Errorf("binary in a string column: %+v %v", res, err)
	}
}

// TestBytes_Declared: bytes, bytes? and bytes(1..255) declare; other widths do not; the
// binary-handling-mode setting takes Debezium's four values.
func TestBytes_Declared(t *testing.T) {
	for typ, ok := range map[index.ColumnType]bool{"bytes": true, "bytes?": true, "bytes(16)": true, "bytes(255)?": true,
		"bytes(0)": false, "bytes(256)": false, "bytes(4,2)": false} {
		spec := indextest.BinaryTable("shop")
		spec.Columns[1].Type = typ
		if err := spec.Validate(); (err == nil) != ok {
			t.Errorf("%s: %v", typ, err)
		}
	}
	for _, mode := range []string{"", index.BinaryBytes, index.BinaryBase64, index.BinaryBase64URLSafe, index.BinaryHex} {
		if err := (index.DebeziumSettings{BinaryHandlingMode: mode}).Validate(); err != nil {
			t.Errorf("%q: %v", mode, err)
		}
	}
	if err := (index.DebeziumSettings{BinaryHandlingMode: "base64url"}).Validate(); err == nil || !strings.Contains(err.Error(), "binary-handling-mode") {
		t.Errorf("an unknown mode: %v", err)
	}
}

// TestBytes_VerifyAndRepair: verify reads a source's rows in that source's form: PostgreSQL's
// bytea text finds the index Canal filled equal; a row the source no longer has (a bytes id,
// "AP+AAA==", holding '=') is found extra and the repair deletes it.
func TestBytes_VerifyAndRepair(t *testing.T) {
	ix := binaryIndex(t, index.DebeziumSettings{})
	canal := `{"data":[{"uid":"\u0000ÿ\u0080","code":"\u0000ÿ\u0080","note":"x"}],"database":"shop","table":"blobs","type":"INSERT","es":1700000000000,"id":1,"isDdl":false}`
	if res := applyEvent(t, ix, index.FormatCanal, canal); res.Applied != 1 {
		t.Fatalf("canal: %+v", res)
	}
	pgRows := func(rows ...map[string]*string) index.RowSource {
		return func(yield func(map[string]*string) bool) error {
			for _, r := range rows {
				if !yield(r) {
					return nil
				}
			}
			return nil
		}
	}
	row := map[string]*string{"uid": index.Str(`\x00ff8000`), "code": index.Str(`\x00ff80`), "note": index.Str("x")}
	rep, err := ix.Verify(context.Background(), "shop", "blobs", pgRows(row), index.EncodingPostgres, false, nil)
	if err != nil || !rep.Clean() {
		t.Fatalf("verify: %+v %v", rep, err)
	}
	rep, err = ix.Verify(context.Background(), "shop", "blobs", pgRows(), index.EncodingPostgres, true, nil)
	if err != nil || rep.Extra != 1 || rep.Repaired != 1 {
		t.Fatalf("repair of a row gone from the source: %+v %v", rep, err)
	}
	if rows := rowsOf(t, ix, "shop", "blobs", map[string]string{"code": indextest.BinaryCodeText}); len(rows) != 0 {
		t.Fatalf("rows left after the repair: %v", rows)
	}
}
