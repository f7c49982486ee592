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

// TestCanal_EveryMySQLType: a flat message with a value of each MySQL type in the form Canal
// writes it (canal's RowsLogBuffer and LogEventConvert, alibaba/canal e20e442: DECIMAL as
// BigDecimal.toPlainString, FLOAT as Float.toString, DATETIME(6) and TIMESTAMP(3) with their
// fraction digits, the zero date, TIME and negative TIME, YEAR, BIT(1), ENUM and SET labels, JSON
// text, NULL) ends in the row each declared type gives.
func TestCanal_EveryMySQLType(t *testing.T) {
	spec := index.TableSpec{DB: "shop", Table: "types", Key: "id",
		Columns: []index.Column{{Name: "id", Type: index.TypeLong}, {Name: "ti", Type: index.TypeByte}, {Name: "si", Type: index.TypeShort},
			{Name: "mi", Type: index.TypeInt}, {Name: "bi", Type: index.TypeLong}, {Name: "ub", Type: index.TypeString},
			{Name: "f", Type: index.TypeFloat}, {Name: "d", Type: index.TypeDouble}, {Name: "dec", Type: "decimal(15,2)"},
			{Name: "dt", Type: "datetime(6)"}, {Name: "ts", Type: index.TypeDateTime}, {Name: "zero", Type: "datetime?"}, {Name: "day", Type: index.TypeDate},
			{Name: "zday", Type: "date?"}, {Name: "tm", Type: index.TypeTime}, {Name: "neg", Type: index.TypeTime}, {Name: "yr", Type: index.TypeShort},
			{Name: "b", Type: index.TypeBool}, {Name: "e", Type: index.TypeString}, {Name: "st", Type: index.TypeString},
			{Name: "js", Type: index.TypeString}, {Name: "txt", Type: "string?"}},
		Dimensions: [][]index.Part{{{Code: "day", Column: "day"}}, {{Code: "dt", Column: "dt"}}}}
	msg := `{"data":[{"id":"1","ti":"-128","si":"32767","mi":"-8388608","bi":"9223372036854775807","ub":"18446744073709551615",` +
		`"f":"0.1","d":"3.141592653589793","dec":"-111.10","dt":"2022-10-14 23:55:31.989360","ts":"2022-10-14 23:55:31.123",` +
		`"zero":"0000-00-00 00:00:00","day":"2022-10-14","zday":"0000-00-00","tm":"23:55:31","neg":"-838:59:59.000000","yr":"2022",` +
		`"b":"1","e":"small","st":"a,c","js":"{\"k\": [1, 2]}","txt":null}],"database":"shop","es":1665791731000,"id":9,"isDdl":false,` +
		`"mysqlType":{"id":"bigint","ti":"tinyint","si":"smallint","mi":"mediumint","bi":"bigint","ub":"bigint unsigned","f":"float","d":"double",` +
		`"dec":"decimal(15,2)","dt":"datetime(6)","ts":"timestamp(3)","zero":"datetime","day":"date","zday":"date","tm":"time","neg":"time(6)",` +
		`"yr":"year","b":"bit(1)","e":"enum('small','large')","st":"set('a','b','c')","js":"json","txt":"text"},"old":null,"pkNames":["id"],` +
		`"sql":"","table":"types","ts":1665791731500,"type":"INSERT"}`
	ix := fixtureIndex(t, spec, index.Options{}, index.FormatCanal, []json.RawMessage{json.RawMessage(msg)})
	row := rowsOf(t, ix, "shop", "types", map[string]string{"day": "2022-10-14"})["1"]
	want := map[string]any{"ti": json.Number("-128"), "si": json.Number("32767"), "mi": json.Number("-8388608"), "bi": json.Number("9223372036854775807"),
		"ub": "18446744073709551615", "f": json.Number("0.1"), "d": json.Number("3.141592653589793"), "dec": "-111.10",
		"dt": "2022-10-14T23:55:31.98936", "ts": "2022-10-14T23:55:31.123", "zero": nil, "day": "2022-10-14", "zday": nil,
		"tm": "23:55:31", "neg": "-838:59:59", "yr": json.Number("2022"), "b": true, "e": "small", "st": "a,c", "js": `{"k": [1, 2]}`, "txt": nil}
	for col, v := range want {
		if got, ok := row[col]; !ok || got != v {
			t.Errorf("%s = %#v, want %#v", col, got, v)
		}
	}
	if rows := rowsOf(t, ix, "shop", "types", map[string]string{"dt": "2022-10-14 23:55:31.98936"}); rows["1"] == nil {
		t.Errorf("the dt key does not hold the row's value")
	}
}
