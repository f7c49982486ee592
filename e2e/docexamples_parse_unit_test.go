package e2e

import (
	"slices"
	"testing"
)

// TestDocExamples_Parse: the markdown conventions of docExample (multi-line commands,
// expectations, skips, variables, files) are read as documented.
func TestDocExamples_Parse(t *testing.T) {
	md := "intro `curl -s $B/not-a-block`\n\n" +
		"<!-- file: doc.json -->\n```json\n{\"a\": 1}\n```\n\n" +
		"```sh\nB=http://127.0.0.1:8080\ngo run ./cmd/redstate serve\n" +
		"curl -sS -X PUT $B/x -d '{\n  \"k\": \"# not a comment\"\n}'\n" +
		"curl -sS $B/y \\\n  -H 'If-Match: \"e\"'   # expect 412: stale\n" +
		"ID=42\n" +
		"curl -sS \"$B/z#frag\" # untested: needs a second server\n" +
		"curl -s $B/w | jq . # {\"expect\": 1}\n```\n"
	examples, files, err := parseDocExamples("x.md", md)
	if err != nil {
		t.Fatal(err)
	}
	if files["doc.json"] != "{\"a\": 1}\n" || len(files) != 1 {
		t.Errorf("files = %q", files)
	}
	want := []docExample{
		{file: "x.md", line: 11, script: "curl -sS -X PUT $B/x -d '{\n  \"k\": \"# not a comment\"\n}'", env: []string{"B=http://127.0.0.1:8080"}},
		{file: "x.md", line: 14, script: "curl -sS $B/y \\\n  -H 'If-Match: \"e\"'   # expect 412: stale", expect: 412, env: []string{"B=http://127.0.0.1:8080"}},
		{file: "x.md", line: 17, script: "curl -sS \"$B/z#frag\" # untested: needs a second server", skip: "needs a second server", env: []string{"B=http://127.0.0.1:8080", "ID=42"}},
		{file: "x.md", line: 18, script: "curl -s $B/w | jq . # {\"expect\": 1}", env: []string{"B=http://127.0.0.1:8080", "ID=42"}},
	}
	if len(examples) != len(want) {
		t.Fatalf("got %d examples, want %d: %+v", len(examples), len(want), examples)
	}
	for i, w := range want {
		g := examples[i]
		if g.file != w.file || g.line != w.line || g.script != w.script || g.expect != w.expect || g.skip != w.skip || !slices.Equal(g.env, w.env) {
			t.Errorf("example %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
	for _, bad := range []string{"```sh\ncurl -d '{\n```\n", "```sh\ncurl $B \\\n```\n", "```sh\ncurl $B\n"} {
		if _, _, err := parseDocExamples("bad.md", bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
