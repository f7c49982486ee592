package index_test

import (
	"encoding/json"
	"testing"

	"github.com/redstate/redstate/index"
)

// TestTextRow_StringsAsJSONDecodesThem: the fast path for strings that need no decoding gives
// what json.Unmarshal gives, and escaped, control-character and invalid UTF-8 strings still
// decode as json.Unmarshal decodes them.
func TestTextRow_StringsAsJSONDecodesThem(t *testing.T) {
	for _, raw := range []string{`"abc"`, `""`, `"é 中"`, `"a\"b"`, `"a\\nb"`, `"\u00e9"`, "\"\xff\xfe\"", `"<&>"`, `" x "`, `"\t"`} {
		var want string
		if err := json.Unmarshal([]byte(raw), &want); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		got := index.TextRow(map[string]json.RawMessage{"c": json.RawMessage(raw)})["c"]
		if got == nil || *got != want {
			t.Errorf("%s: got %v, want %q", raw, got, want)
		}
	}
	row := index.TextRow(map[string]json.RawMessage{"n": json.RawMessage("12"), "z": json.RawMessage("null"), "b": json.RawMessage("true")})
	if *row["n"] != "12" || row["z"] != nil || *row["b"] != "true" {
		t.Errorf("non-strings: %v", row)
	}
}

// TestParseEvent_CanalValuesOfEveryJSONType: flat messages of strings and nulls (what Canal
// writes, read without reflection) and ones with numbers, booleans and objects (read value by
// value) give the rows json.Unmarshal and TextRow give, whatever the spacing, escapes and
// repeated columns.
func TestParseEvent_CanalValuesOfEveryJSONType(t *testing.T) {
	const head = `"database":"db1","table":"t","type":"UPDATE","es":1700000000000,"id":3,"isDdl":false`
	for _, data := range []string{
		`[{"id":"1","a":"x\"y","c":null}]`,
		` [ { "id" : "1" , "a" : "é\u00e9\n" , "c" : null } , {"id":"2"} ] `,
		`[{"i\u0064":"1","a":"first","a":"last"},{}]`,
		`[{"id":1,"a":"x","b":true,"c":null,"d":{"k":1},"e":[1]}]`,
		`[{"id":"1","a":"<&>\t"},{"id":2.5}]`,
		`[]`,
	} {
		raw := `{"data":` + data + `,` + head + `}`
		changes, skipped, err := index.ParseEvent(index.FormatCanal, json.RawMessage(raw), 5)
		var want []map[string]json.RawMessage
		if jerr := json.Unmarshal([]byte(data), &want); jerr != nil || err != nil || skipped || len(changes) != len(want) {
			t.Fatalf("%s: %v, %v, %v (%v)", raw, changes, skipped, err, jerr)
		}
		for i, w := range want {
			wantRow, got := index.TextRow(w), changes[i].Row
			if len(got) != len(wantRow) {
				t.Errorf("%s: row %d = %v, want %v", raw, i, got, wantRow)
			}
			for col, wv := range wantRow {
				if g, ok := got[col]; !ok || (g == nil) != (wv == nil) || (g != nil && *g != *wv) {
					t.Errorf("%s: row %d column %s = %v, want %v", raw, i, col, g, wv)
				}
			}
		}
	}
	for _, raw := range []string{
		`{"data":[{"id":"1"}],"es":"soon","type":"INSERT"}`,
		`{"data":{"id":"1"},"es":1,"type":"INSERT"}`,
		`{"data":["1"],"es":1,"type":"INSERT"}`,
	} {
		if _, _, err := index.ParseEvent(index.FormatCanal, json.RawMessage(raw), 0); err == nil {
			t.Errorf("%s parsed", raw)
		}
	}
}
