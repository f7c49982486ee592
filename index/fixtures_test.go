package index_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/memindex"
)

// fixtureLines reads a testdata file of one JSON event per line (see testdata/*/SOURCE.md).
func fixtureLines(t testing.TB, path ...string) []json.RawMessage {
	t.Helper()
	f, err := os.Open(filepath.Join(append([]string{"testdata"}, path...)...))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []json.RawMessage
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if len(sc.Bytes()) > 0 {
			out = append(out, json.RawMessage(append([]byte(nil), sc.Bytes()...)))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// fixtureIndex applies events in format to a memory index of spec and returns it, failing on
// any event that does not apply.
func fixtureIndex(t testing.TB, spec index.TableSpec, opts index.Options, format string, events []json.RawMessage) *index.Indexer {
	t.Helper()
	ix, err := index.New(memindex.New(), []index.TableSpec{spec}, opts)
	if err != nil {
		t.Fatal(err)
	}
	p, err := index.ParseEventList(format, events, 0)
	if err != nil || len(p.Errors) > 0 {
		t.Fatalf("parse: %v %v", err, p.Errors)
	}
	res, err := ix.Apply(context.Background(), p.Changes)
	if err != nil || res.Failed > 0 {
		t.Fatalf("apply: %v %+v", err, res)
	}
	return ix
}

// rowsOf returns the rows of one index key of ix, decoded.
func rowsOf(t testing.TB, ix *index.Indexer, db, table string, conds map[string]string) map[string]map[string]any {
	t.Helper()
	raw, err := ix.Query(context.Background(), db, table, conds)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for id, r := range raw {
		var m map[string]any
		dec := json.NewDecoder(bytes.NewReader(r))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		out[id] = m
	}
	return out
}

// flinkProducts is Flink's products table as redstate declares it: weight a MySQL FLOAT.
var flinkProducts = index.TableSpec{DB: "inventory", Table: "products2", Key: "id",
	Columns: []index.Column{{Name: "id", Type: index.TypeLong}, {Name: "name", Type: index.TypeString},
		{Name: "description", Type: index.TypeString}, {Name: "weight", Type: index.TypeFloat}},
	Dimensions: [][]index.Part{{{Code: "n", Column: "name"}}}}

// TestCanalFixture_FloatKeepsItsDecimal: Canal's flat messages of Flink's products table (a
// MySQL FLOAT weight) end in the rows Flink's test expects, each weight the shortest decimal
// of the float ("0.1", not 0.10000000149011612).
func TestCanalFixture_FloatKeepsItsDecimal(t *testing.T) {
	ix := fixtureIndex(t, flinkProducts, index.Options{}, index.FormatCanal, fixtureLines(t, "canal", "flink-canal-data.txt"))
	want := map[string]map[string]string{
		"scooter":            {"101": "5.17"},
		"hammer":             {"104": "0.75", "105": "0.875", "106": "1"},
		"rocks":              {"107": "5.1"},
		"jacket":             {"108": "0.1", "110": "0.5"},
		"spare tire":         {"109": "22.2"},
		"car battery":        {},
		"12-pack drill bits": {},
	}
	for name, ids := range want {
		rows := rowsOf(t, ix, "inventory", "products2", map[string]string{"n": name})
		if len(rows) != len(ids) {
			t.Errorf("%s: rows %v, want %v", name, rows, ids)
		}
		for id, weight := range ids {
			if got := rows[id]["weight"]; got != json.Number(weight) {
				t.Errorf("%s %s: weight %v, want %s", name, id, got, weight)
			}
		}
	}
	if d := rowsOf(t, ix, "inventory", "products2", map[string]string{"n": "hammer"})["106"]["description"]; d != "18oz carpenter hammer" {
		t.Errorf("106: %v", d)
	}
}
