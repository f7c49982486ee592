package mysqlsource

import (
	"testing"
	"time"

	"github.com/redstate/redstate/index"
)

// TestVersion_OrdersAlongTheLog: versions grow with the file, the position and the row, and a
// snapshot at P is older than every event ending after P.
func TestVersion_OrdersAlongTheLog(t *testing.T) {
	ordered := [][3]any{
		{"binlog.000001", uint32(4), 0},
		{"binlog.000001", uint32(4), 1},
		{"binlog.000001", uint32(900), 0},
		{"binlog.000001", uint32(1 << 31), 0},
		{"binlog.000002", uint32(4), 0},
		{"binlog.000010", uint32(4), 0},
	}
	var prev index.Version
	for i, o := range ordered {
		v, err := version(o[0].(string), o[1].(uint32), o[2].(int))
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && v <= prev {
			t.Errorf("%v: version %s is not after %s", o, v, prev)
		}
		prev = v
	}
	if _, err := version("binlog", 4, 0); err == nil {
		t.Error("a file without a numeric suffix must fail")
	}
}

func TestParsePosition_RoundTrips(t *testing.T) {
	p := Position{File: "mysql-bin.000042", Pos: 1234}
	got, err := ParsePosition(p.String())
	if err != nil || got != p {
		t.Fatalf("ParsePosition(%q) = %v, %v", p.String(), got, err)
	}
	for _, bad := range []string{"", "x", ":4", "f:-1", "f:99999999999"} {
		if _, err := ParsePosition(bad); err == nil {
			t.Errorf("ParsePosition(%q) must fail", bad)
		}
	}
}

func TestParseColumnType(t *testing.T) {
	c := parseColumnType("ENUM", "enum('a','it''s','c,d')")
	if c.DataType != "enum" || len(c.Labels) != 3 || c.Labels[1] != "it's" || c.Labels[2] != "c,d" {
		t.Errorf("enum = %+v", c)
	}
	if c := parseColumnType("int", "int(10) unsigned"); !c.Unsigned || c.Labels != nil {
		t.Errorf("unsigned int = %+v", c)
	}
	if c := parseColumnType("binary", "binary(16)"); c.Width != 16 {
		t.Errorf("binary(16) = %+v", c)
	}
}

// TestText_BinlogAndSelectAgree: the binary log's raw values (signed integers of unsigned
// columns, ENUM indexes, SET masks, times, a BINARY(n) without its trailing zero bytes) give the
// text SELECT gives.
func TestText_BinlogAndSelectAgree(t *testing.T) {
	at := time.Date(2025, 11, 9, 10, 30, 0, 500000000, time.UTC)
	local := at.In(time.FixedZone("x", 5*3600+1800))
	cases := []struct {
		v    any
		c    column
		want string
	}{
		{int32(-1), column{DataType: "int", Unsigned: true}, "4294967295"},
		{int32(-1), column{DataType: "int"}, "-1"},
		{int8(-56), column{DataType: "tinyint", Unsigned: true}, "200"},
		{int16(-1), column{DataType: "smallint", Unsigned: true}, "65535"},
		{int32(-1), column{DataType: "mediumint", Unsigned: true}, "16777215"},
		{int64(-1), column{DataType: "bigint", Unsigned: true}, "18446744073709551615"},
		{int64(2), column{DataType: "enum", Labels: []string{"a", "b"}}, "b"},
		{int64(0), column{DataType: "enum", Labels: []string{"a", "b"}}, ""},
		{int64(5), column{DataType: "set", Labels: []string{"a", "b", "c"}}, "a,c"},
		{"12.50", column{DataType: "decimal"}, "12.50"},
		{[]byte("héllo"), column{DataType: "varchar"}, "héllo"},
		{"\x00\xff\x80", column{DataType: "binary", Width: 4}, "\x00\xff\x80\x00"},
		{[]byte("\x00\xff\x80\x00"), column{DataType: "binary", Width: 4}, "\x00\xff\x80\x00"},
		{"\x00\xff\x80", column{DataType: "varbinary"}, "\x00\xff\x80"},
		{float64(1.5), column{DataType: "double"}, "1.5"},
		{float32(0.1), column{DataType: "float"}, "0.1"},
		{local, column{DataType: "timestamp"}, "2025-11-09T10:30:00.5Z"},
		{at, column{DataType: "datetime"}, "2025-11-09T10:30:00.5"},
		{at, column{DataType: "date"}, "2025-11-09"},
	}
	for _, c := range cases {
		got := text(c.v, c.c)
		if got == nil || *got != c.want {
			t.Errorf("text(%#v, %s) = %v, want %q", c.v, c.c.DataType, got, c.want)
		}
	}
	if text(nil, column{}) != nil {
		t.Error("NULL must stay nil")
	}
}

// TestMapRow: names from the event's metadata win; otherwise by position in the current
// columns; values beyond the known columns are dropped.
func TestMapRow(t *testing.T) {
	cols := []column{{Name: "id", DataType: "int"}, {Name: "n", DataType: "int", Unsigned: true}}
	row := imageLayout(cols, nil, nil).row([]any{int32(1), int32(-1), "extra"})
	if *row["id"] != "1" || *row["n"] != "4294967295" || len(row) != 2 {
		t.Errorf("by position = %v", row)
	}
	row = imageLayout(cols, []string{"n", "id"}, nil).row([]any{int32(-1), int32(7)})
	if *row["n"] != "4294967295" || *row["id"] != "7" {
		t.Errorf("by name = %v", row)
	}
	row = imageLayout(cols, nil, nil).row([]any{int32(1)}) // an image older than an added column
	if *row["id"] != "1" || len(row) != 1 {
		t.Errorf("short image = %v", row)
	}
}

func TestSQLURL_AddsADatabaseWhenNone(t *testing.T) {
	for in, want := range map[string]string{
		"mysql://u:p@h:3306/":          "mysql://u:p@h:3306/information_schema",
		"mysql://u:p@h:3306":           "mysql://u:p@h:3306/information_schema",
		"mysql://u:p@h/shop?tls=true":  "mysql://u:p@h/shop?tls=true",
		"mariadb://u:p@h:3306/?tls=on": "mariadb://u:p@h:3306/information_schema?tls=on",
	} {
		if got := SQLURL(in); got != want {
			t.Errorf("SQLURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestTruncatedTable: the TRUNCATE statements the binary log holds name their table, qualified
// or in the statement's database; other statements are none.
func TestTruncatedTable(t *testing.T) {
	for q, want := range map[string][2]string{
		"TRUNCATE items":                          {"shop", "items"},
		"truncate table `items`":                  {"shop", "items"},
		"TRUNCATE TABLE `other`.`it``ems`;":       {"other", "it`ems"},
		"/* app */ TRUNCATE other.items":          {"other", "items"},
		"TRUNCATE\n  TABLE items ;":               {"shop", "items"},
		"ALTER TABLE items TRUNCATE PARTITION p0": {"", ""},
		"TRUNCATE TABLE items, other":             {"", ""},
		"BEGIN":                                   {"", ""},
	} {
		db, name, ok := truncatedTable(q, "shop")
		if ok != (want[1] != "") || db != want[0] || name != want[1] {
			t.Errorf("%q: %q %q %v, want %v", q, db, name, ok, want)
		}
	}
}
