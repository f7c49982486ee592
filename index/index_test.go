package index

import (
	"strings"
	"testing"

	"github.com/redstate/redstate"
)

func TestConvert_SeedTypes(t *testing.T) {
	cases := []struct {
		typ  ColumnType
		in   *string
		want string // JSON of the value, or "error"
	}{
		{TypeString, Str("a:b"), `"a:b"`}, {TypeChar, Str("xyz"), `"x"`}, {TypeByte, Str("127"), `127`},
		{TypeByte, Str("128"), "error"}, {TypeShort, Str("-32768"), `-32768`}, {TypeInt, Str("2147483648"), "error"},
		{TypeLong, Str("9007199254740993"), `9007199254740993`}, {TypeFloat, Str("1.5"), `1.5`},
		{TypeDouble, Str("NaN"), "error"}, {TypeDouble, Str("x"), "error"}, {TypeBool, Str("1"), `true`},
		{TypeBool, Str("maybe"), "error"}, {TypeDecimal, Str("12.3400"), `"12.3400"`}, {TypeDecimal, Str("1e"), "error"},
		{TypeDateTime, Str("2025-11-09 10:30:00"), `"2025-11-09T10:30:00"`},
		{TypeDateTime, Str("2025-11-09T10:30:00+08:00"), `"2025-11-09T02:30:00Z"`},
		{TypeDateTime, Str("yesterday"), "error"},
		{TypeInt, nil, `0`}, {"int?", nil, `null`}, {TypeString, nil, `null`}, {TypeBool, nil, `false`},
	}
	for _, c := range cases {
		col := compileColumn(Column{Name: "c", Type: c.typ})
		v, err := convert(&col, c.in, &valueForm{})
		if c.want == "error" {
			if err == nil || !strings.Contains(err.Error(), "column c") {
				t.Errorf("%s %v: %v, %v; want an error naming the column", c.typ, *c.in, v, err)
			}
			continue
		}
		b, _ := rowJSON([]Column{{Name: "c", Type: c.typ}}, map[string]*string{"c": c.in})
		if err != nil || string(b) != `{"c":`+c.want+`}` {
			t.Errorf("%s: %s, %v; want %s", c.typ, b, err, c.want)
		}
	}
}

func TestSpec_ValidateListsEveryProblem(t *testing.T) {
	err := TableSpec{DB: "db 1", Table: "t", Columns: []Column{{Name: "a", Type: "uuid"}, {Name: "a", Type: "int"}},
		Dimensions: [][]Part{{{Code: "x:y", Column: "a"}}, {}}}.Validate()
	if err == nil {
		t.Fatal("invalid spec accepted")
	}
	for _, want := range []string{`db "db 1"`, "key (the business-key column) is required", `unsupported type "uuid"`, "declared twice", `code "x:y"`, "dimensions[1] is empty"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in %v", want, err)
		}
	}
}

// TestSpec_RowKeyCodesAreReserved: a dimension code "fil" or "kid" would make index keys such as
// <table>:fil-10001 — the version key of row 10001 — and match the row keys' SCAN pattern.
func TestSpec_RowKeyCodesAreReserved(t *testing.T) {
	for _, code := range []string{"fil", "kid"} {
		err := TableSpec{DB: "db1", Table: "t", Key: "id", Columns: []Column{{Name: "id", Type: "int"}, {Name: "a", Type: "int"}},
			Dimensions: [][]Part{{{Code: code, Column: "a"}}}}.Validate()
		if err == nil || !strings.Contains(err.Error(), "code \""+code+"\" is reserved") {
			t.Errorf("code %q: %v; want it refused as reserved", code, err)
		}
	}
}

func TestVersions_OrderAndLSN(t *testing.T) {
	if !(PostgresVersion(10, 99) < PostgresVersion(11, 1)) {
		t.Error("a later commit must win whatever the change LSN")
	}
	if !(PostgresVersion(10, 1) < PostgresVersion(10, 2)) || !(BinlogVersion(3, 900, 0) < BinlogVersion(4, 1, 0)) ||
		!(TimeVersion(1000, 5, 9, 0) < TimeVersion(1000, 6, 0, 0)) || !(TimeVersion(1000, 5, 1, 3) < TimeVersion(1000, 5, 2, 0)) {
		t.Error("versions do not order")
	}
	lsn, err := ParseLSN("16/B374D848")
	if err != nil || FormatLSN(lsn) != "16/B374D848" {
		t.Errorf("LSN round trip: %x, %v", lsn, err)
	}
	if !Newer(PostgresVersion(2, 2), VersionValue(PostgresVersion(1, 1), "x")) || Newer(PostgresVersion(1, 1), VersionValue(PostgresVersion(1, 1), "")) {
		t.Error("Newer")
	}
}

func TestKeys_SeedLayout(t *testing.T) {
	k := NewKeys(redstate.Prefix("", "las_im_data_sync"), "db1", "table1", false)
	parts := []Part{{Code: "las", Column: "a"}, {Code: "cat", Column: "b"}, {Code: "bra", Column: "c"}}
	if got := k.Index(parts, []*string{Str("72"), Str("870"), Str("3987")}); got != "las_im_data_sync:db1:table1:las-72:cat-870:bra-3987" {
		t.Errorf("index key %s", got)
	}
	if k.Version("10001") != "las_im_data_sync:db1:table1:fil-10001" || k.LegacyRelation("10001") != "las_im_data_sync:db1:table1:kid-10001" {
		t.Errorf("row keys %s %s", k.Version("10001"), k.LegacyRelation("10001"))
	}
	if got := NewKeys(redstate.Prefix("", "p"), "d", "t", true).Index(parts[:1], []*string{nil}); got != "{p:d:t}:las-~" {
		t.Errorf("tagged null key %s", got)
	}
	if got := k.Index(parts[:1], []*string{Str("")}); got != "las_im_data_sync:db1:table1:las-%" {
		t.Errorf("empty value key %s, want the segment %% as docs/index.md says", got)
	}
	if got := NewKeys(redstate.Prefix("nsq-", "p"), "d", "t", true).Version("1"); got != "nsq-{p:d:t}:fil-1" {
		t.Errorf("namespaced tagged key %s", got)
	}
}

// TestBlockKeys_Layout pins the index's own keys (dead letters, counters, the sources' prefix)
// with and without a namespace, and the Indexer's accessors that return them.
func TestBlockKeys_Layout(t *testing.T) {
	k := NewBlockKeys(redstate.Prefix("nsq-", ""))
	if k.DeadLetter() != "nsq-las_im_data_sync:deadletter" || k.Counters() != "nsq-las_im_data_sync:counters" ||
		k.SourcePrefix() != "nsq-las_im_data_sync:source:" {
		t.Errorf("block keys %s %s %s", k.DeadLetter(), k.Counters(), k.SourcePrefix())
	}
	ix, err := New(nil, nil, Options{Namespace: "nsq-", Prefix: "p"})
	if err != nil {
		t.Fatal(err)
	}
	if ix.DeadLetterKey() != "nsq-p:deadletter" || ix.CountersKey() != "nsq-p:counters" || ix.BlockKeys().SourcePrefix() != "nsq-p:source:" {
		t.Errorf("indexer keys %s %s %s", ix.DeadLetterKey(), ix.CountersKey(), ix.BlockKeys().SourcePrefix())
	}
}
