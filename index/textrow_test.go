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
