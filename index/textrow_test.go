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

// TestParseEvent_CanalValuesOfEveryJSONType: a flat message of strings and nulls (what Canal
// writes) and one with numbers, booleans and objects give the same text rows a value-by-value
// read gives.
func TestParseEvent_CanalValuesOfEveryJSONType(t *testing.T) {
	const head = `"database":"db1","table":"t","type":"UPDATE","es":1700000000000,"id":3,"isDdl":false`
	for raw, want := range map[string]map[string]*string{
		`{"data":[{"id":"1","a":"x\"y","c":null}],` + head + `}`:                 {"id": index.Str("1"), "a": index.Str(`x"y`), "c": nil},
		`{"data":[{"id":1,"a":"x","b":true,"c":null,"d":{"k":1}}],` + head + `}`: {"id": index.Str("1"), "a": index.Str("x"), "b": index.Str("true"), "c": nil, "d": index.Str(`{"k":1}`)},
	} {
		changes, skipped, err := index.ParseEvent(index.FormatCanal, json.RawMessage(raw), 5)
		if err != nil || skipped || len(changes) != 1 {
			t.Fatalf("%s: %v, %v, %v", raw, changes, skipped, err)
		}
		got := changes[0].Row
		if len(got) != len(want) {
			t.Errorf("%s: row %v", raw, got)
		}
		for col, w := range want {
			if g, ok := got[col]; !ok || (g == nil) != (w == nil) || (g != nil && *g != *w) {
				t.Errorf("%s: column %s = %v, want %v", raw, col, g, w)
			}
		}
	}
	if _, _, err := index.ParseEvent(index.FormatCanal, json.RawMessage(`{"data":[{"id":"1"}],"es":"soon","type":"INSERT"}`), 0); err == nil {
		t.Error("a flat message whose es is a string parsed")
	}
}
