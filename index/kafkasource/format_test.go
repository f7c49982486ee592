package kafkasource

import (
	"testing"

	"github.com/redstate/redstate/index"
)

// TestDetectFormat_ReadsTopLevelNamesOnly: the format comes from the top-level field names
// (any case, escaped or not), whatever nested values and strings hold; what is not a JSON
// object, or is neither format, is refused.
func TestDetectFormat_ReadsTopLevelNamesOnly(t *testing.T) {
	for raw, want := range map[string]string{
		`{"data":[{"id":"1","x":"}],{"}],"database":"db1","type":"INSERT","es":1}`:    index.FormatCanal,
		` { "isDdl" : true , "type" : "ALTER" , "data" : null } `:                     index.FormatCanal,
		`{"DATA":[],"Type":"UPDATE"}`:                                                 index.FormatCanal,
		`{"d\u0061ta":[],"type":"UPDATE"}`:                                            index.FormatCanal,
		`{"type":"x\"","data":"a\\"}`:                                                 index.FormatCanal,
		`{"schema":{"type":"struct","data":1},"payload":{"op":"c"}}`:                  index.FormatDebezium,
		`{"before":null,"after":{"id":1},"source":{"db":"d"},"op":"c","ts_ms":1.5e3}`: index.FormatDebezium,
		`{"payload":null}`: index.FormatDebezium,
		`{"hello":"world","n":[1,{"type":2,"data":3}]}`: "",
		`{}`:                             "",
		`{"type":"INSERT"}`:              "",
		`{not json`:                      "",
		`[{"type":"INSERT","data":[]}]`:  "",
		`{"type":"INSERT" "data":[]}`:    "",
		`{"type":"INSERT","data":[}`:     "",
		`{"type":"INSERT","data":[]} x`:  "",
		`{"type":"INSERT","data":"open}`: "",
		`{"type":,"data":[]}`:            "",
		``:                               "",
	} {
		got, err := detectFormat([]byte(raw))
		if got != want || (err == nil) != (want != "") {
			t.Errorf("%s: %q, %v; want %q", raw, got, err, want)
		}
	}
}
