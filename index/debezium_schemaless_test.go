package index_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/memindex"
)

// risingWaveOrders is RisingWave's MySQL test table (see testdata/debezium/SOURCE.md) as
// redstate declares it, keyed by O_DATETIME and O_DATE.
var risingWaveOrders = index.TableSpec{DB: "test", Table: "orders", Key: "O_KEY",
	Columns: []index.Column{{Name: "O_KEY", Type: index.TypeLong}, {Name: "O_BOOL", Type: index.TypeBool},
		{Name: "O_TINY", Type: index.TypeShort}, {Name: "O_INT", Type: index.TypeInt}, {Name: "O_REAL", Type: index.TypeDouble},
		{Name: "O_DOUBLE", Type: index.TypeDouble}, {Name: "O_DECIMAL", Type: "decimal(15,2)"}, {Name: "O_CHAR", Type: index.TypeString},
		{Name: "O_DATE", Type: index.TypeDate}, {Name: "O_TIME", Type: index.TypeTime}, {Name: "O_DATETIME", Type: index.TypeDateTime},
		{Name: "O_TIMESTAMP", Type: index.TypeDateTime}, {Name: "O_JSON", Type: index.TypeString}},
	Dimensions: [][]index.Part{{{Code: "dt", Column: "O_DATETIME"}}, {{Code: "d", Column: "O_DATE"}}}}

// TestDebeziumSchemaless_MySQLByTheConnectorsSettings: RisingWave's Debezium MySQL events
// without a schema, read with the settings RisingWave runs Debezium with (time.precision.mode
// adaptive_time_microseconds, decimal.handling.mode double), end in the values RisingWave's test
// asserts: O_TIME 86399000000 µs is 23:59:59, O_DATETIME 99999999999000 ms (a DATETIME, no
// precision) 5138-11-16T09:46:39; and the keys hold those values.
func TestDebeziumSchemaless_MySQLByTheConnectorsSettings(t *testing.T) {
	opts := index.Options{Debezium: index.DebeziumSettings{TimePrecisionMode: index.TimeAdaptiveMicroseconds, DecimalHandlingMode: index.DecimalDouble}}
	ix := fixtureIndex(t, risingWaveOrders, opts, index.FormatDebezium, []json.RawMessage{fixtureEvent(t, "debezium", "risingwave-mysql-insert.json")})
	row := rowsOf(t, ix, "test", "orders", map[string]string{"dt": "1970-01-01T00:00:00"})["111"]
	want := map[string]any{"O_BOOL": true, "O_TINY": json.Number("-1"), "O_DECIMAL": "-111.11", "O_DATE": "1000-01-01", "O_TIME": "00:00:00",
		"O_DATETIME": "1970-01-01T00:00:00", "O_TIMESTAMP": "1970-01-01T00:00:01Z", "O_REAL": json.Number("-11.11")}
	for col, v := range want {
		if row[col] != v {
			t.Errorf("insert %s = %#v, want %#v", col, row[col], v)
		}
	}
	update := fixtureEvent(t, "debezium", "risingwave-mysql-update.json")
	p, err := index.ParseEventList(index.FormatDebezium, []json.RawMessage{update}, 1)
	if err != nil || len(p.Changes) != 1 {
		t.Fatal(err, p.Errors)
	}
	if res, err := ix.Apply(context.Background(), p.Changes); err != nil || res.Applied != 1 {
		t.Fatalf("update: %+v %v", res, err)
	}
	row = rowsOf(t, ix, "test", "orders", map[string]string{"dt": "5138-11-16 09:46:39"})["111"]
	want = map[string]any{"O_BOOL": false, "O_DECIMAL": "333.33", "O_DATE": "9999-12-31", "O_TIME": "23:59:59",
		"O_DATETIME": "5138-11-16T09:46:39", "O_TIMESTAMP": "2038-01-09T03:14:07Z", "O_CHAR": "no thanks"}
	for col, v := range want {
		if row[col] != v {
			t.Errorf("update %s = %#v, want %#v", col, row[col], v)
		}
	}
	if rows := rowsOf(t, ix, "test", "orders", map[string]string{"d": "9999-12-31"}); rows["111"] == nil {
		t.Errorf("the date key holds no row: %v", rows)
	}
}

// risingWaveTemporal is RisingWave's PostgreSQL temporal test table with its precisions.
var risingWaveTemporal = index.TableSpec{DB: "test", Table: "orders", Key: "o_key",
	Columns: []index.Column{{Name: "o_key", Type: index.TypeInt}, {Name: "o_time_0", Type: "time(0)"}, {Name: "o_time_6", Type: "time(6)"},
		{Name: "o_timez_0", Type: index.TypeTime}, {Name: "o_timez_6", Type: index.TypeTime}, {Name: "o_timestamp_0", Type: "datetime(0)"},
		{Name: "o_timestamp_6", Type: "datetime(6)"}, {Name: "o_timestampz_0", Type: index.TypeDateTime}, {Name: "o_timestampz_6", Type: index.TypeDateTime},
		{Name: "o_interval", Type: index.TypeString}, {Name: "o_date", Type: index.TypeDate}},
	Dimensions: [][]index.Part{{{Code: "t6", Column: "o_timestamp_6"}}}}

// TestDebeziumSchemaless_PostgresPrecisions: RisingWave's PostgreSQL temporal event: TIME(0)
// and TIME(6) in microseconds (adaptive_time_microseconds), TIMESTAMP(0) in milliseconds and
// TIMESTAMP(6) in microseconds (the declared precisions say which), the zoned values as
// written. Under adaptive (PostgreSQL's default) a time(0) number is milliseconds, so the same
// event's 40271000000 is refused, naming the fix, rather than stored wrong.
func TestDebeziumSchemaless_PostgresPrecisions(t *testing.T) {
	event := fixtureEvent(t, "debezium", "risingwave-postgres-temporal.json")
	ix := fixtureIndex(t, risingWaveTemporal, index.Options{Debezium: index.DebeziumSettings{TimePrecisionMode: index.TimeAdaptiveMicroseconds}},
		index.FormatDebezium, []json.RawMessage{event})
	row := rowsOf(t, ix, "test", "orders", map[string]string{"t6": "2011-11-11T11:11:11.123456"})["0"]
	want := map[string]any{"o_time_0": "11:11:11", "o_time_6": "11:11:11.00001", "o_timez_0": "11:11:11Z", "o_timez_6": "11:11:11.00001Z",
		"o_timestamp_0": "2011-11-11T11:11:11", "o_timestamp_6": "2011-11-11T11:11:11.123456", "o_timestampz_0": "2011-11-11T03:11:11Z",
		"o_timestampz_6": "2011-11-11T03:11:11.123456Z", "o_date": "1999-09-09", "o_interval": "P1Y2M3DT4H5M6.78S"}
	for col, v := range want {
		if row[col] != v {
			t.Errorf("%s = %#v, want %#v", col, row[col], v)
		}
	}
	ix2, err := index.New(memindex.New(), []index.TableSpec{risingWaveTemporal}, index.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := index.ParseEventList(index.FormatDebezium, []json.RawMessage{event}, 0)
	res, err := ix2.Apply(context.Background(), p.Changes)
	if err != nil || res.Failed != 1 || !strings.Contains(res.Errors[0], "o_time_0") || !strings.Contains(res.Errors[0], "time(6) for microseconds") {
		t.Fatalf("adaptive: %+v %v", res, err)
	}
}

// TestDebeziumSchemaless_DoubleDecimalsAndFloats: PostgreSQL NUMERIC, MONEY and REAL written by
// decimal.handling.mode double (RisingWave's event): the numbers as written, REAL as a float.
func TestDebeziumSchemaless_DoubleDecimalsAndFloats(t *testing.T) {
	spec := index.TableSpec{DB: "test", Table: "orders", Key: "o_key",
		Columns: []index.Column{{Name: "o_key", Type: index.TypeInt}, {Name: "o_real", Type: index.TypeFloat}, {Name: "o_numeric", Type: index.TypeDecimal},
			{Name: "o_numeric_6_3", Type: "decimal(6,3)"}, {Name: "o_money", Type: index.TypeDecimal}, {Name: "o_bigint", Type: index.TypeLong}},
		Dimensions: [][]index.Part{{{Code: "m", Column: "o_money"}}}}
	ix := fixtureIndex(t, spec, index.Options{Debezium: index.DebeziumSettings{DecimalHandlingMode: index.DecimalDouble}}, index.FormatDebezium,
		[]json.RawMessage{fixtureEvent(t, "debezium", "risingwave-postgres-numeric.json")})
	row := rowsOf(t, ix, "test", "orders", map[string]string{"m": "123.12"})["0"]
	if row["o_real"] != json.Number("9.999") || row["o_numeric"] != "123456.789" || row["o_numeric_6_3"] != "123.456" || row["o_bigint"] != json.Number("9223372036854775807") {
		t.Fatalf("row %v", row)
	}
}

// TestDebeziumSchemaless_PreciseDecimals: without a schema, decimal.handling.mode precise (the
// default) writes a DECIMAL as the base64 of its unscaled two's-complement integer: the declared
// scale reads it ("JxA=" is 10000: 10000 at scale 0, 100.00 at scale 2; negative numbers too),
// an object {"scale","value"} is a variable-scale decimal, and a column without a declared
// scale refuses the base64 naming the fix.
func TestDebeziumSchemaless_PreciseDecimals(t *testing.T) {
	spec := index.TableSpec{DB: "shop", Table: "items", Key: "id",
		Columns: []index.Column{{Name: "id", Type: index.TypeLong}, {Name: "n0", Type: "decimal(10)"}, {Name: "n2", Type: "decimal(10,2)"},
			{Name: "neg", Type: "decimal(10,2)"}, {Name: "v", Type: index.TypeDecimal}, {Name: "plain", Type: index.TypeDecimal}},
		Dimensions: [][]index.Part{{{Code: "p", Column: "n2"}}}}
	event := func(id int, plain string) json.RawMessage {
		return json.RawMessage(`{"before":null,"after":{"id":` + string(rune('0'+id)) + `,"n0":"JxA=","n2":"JxA=","neg":"2PA=","v":{"scale":3,"value":"AeJA"},"plain":` + plain + `},` +
			`"source":{"connector":"mysql","db":"shop","table":"items","file":"mysql-bin.000003","pos":` + string(rune('0'+id)) + `00,"row":0},"op":"c"}`)
	}
	ix := fixtureIndex(t, spec, index.Options{}, index.FormatDebezium, []json.RawMessage{event(1, "null")})
	row := rowsOf(t, ix, "shop", "items", map[string]string{"p": "100.00"})["1"]
	if row["n0"] != "10000" || row["n2"] != "100.00" || row["neg"] != "-100.00" || row["v"] != "123.456" || row["plain"] != nil {
		t.Fatalf("row %v", row)
	}
	p, _ := index.ParseEventList(index.FormatDebezium, []json.RawMessage{event(2, `"JxA="`)}, 0)
	res, err := ix.Apply(context.Background(), p.Changes)
	if err != nil || res.Failed != 1 || !strings.Contains(res.Errors[0], "column plain") || !strings.Contains(res.Errors[0], "decimal(p,s)") {
		t.Fatalf("a base64 decimal without a declared scale: %+v %v", res, err)
	}
}

// TestKeys_HoldTheRowsValues: a dimension's key segment is its column's value as the stored
// row holds it (one normalisation for both), and a query's conditions are read the same way:
// "1" and "yes" in a bool column are the key bra-true, "0072" in an int column las-72, a
// date-time however written its ISO-8601 form, "0.10" in a float column 0.1.
func TestKeys_HoldTheRowsValues(t *testing.T) {
	spec := index.TableSpec{DB: "d", Table: "t", Key: "id",
		Columns: []index.Column{{Name: "id", Type: index.TypeLong}, {Name: "ok", Type: index.TypeBool}, {Name: "las", Type: index.TypeInt},
			{Name: "at", Type: index.TypeDateTime}, {Name: "w", Type: index.TypeFloat}, {Name: "day", Type: "date?"}},
		Dimensions: [][]index.Part{{{Code: "ok", Column: "ok"}, {Code: "las", Column: "las"}}, {{Code: "at", Column: "at"}},
			{{Code: "w", Column: "w"}}, {{Code: "day", Column: "day"}}}}
	ix, err := index.New(memindex.New(), []index.TableSpec{spec}, index.Options{})
	if err != nil {
		t.Fatal(err)
	}
	row := map[string]*string{"id": index.Str("1"), "ok": index.Str("1"), "las": index.Str("0072"), "at": index.Str("2022-10-14 23:55:31.98936"),
		"w": index.Str("0.10"), "day": nil}
	if res, err := ix.Apply(context.Background(), []index.Change{{DB: "d", Table: "t", Op: index.OpUpsert, Row: row, Version: index.TimeVersion(1, 0, 0, 0)}}); err != nil || res.Applied != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	for _, conds := range []map[string]string{
		{"ok": "true", "las": "72"}, {"ok": "yes", "las": "+72"}, {"at": "2022-10-14T23:55:31.989360"}, {"w": "0.1"}, {"w": "1e-1"},
	} {
		if rows := rowsOf(t, ix, "d", "t", conds); rows["1"] == nil {
			key, _ := ix.QueryKey("d", "t", conds)
			t.Errorf("%v (%s): no row", conds, key)
		}
	}
	key, _ := ix.QueryKey("d", "t", map[string]string{"ok": "1", "las": "0072"})
	if !strings.HasSuffix(key, ":ok-true:las-72") {
		t.Errorf("key %s", key)
	}
	if _, err := ix.QueryKey("d", "t", map[string]string{"ok": "maybe", "las": "72"}); err == nil || !strings.Contains(err.Error(), "condition ok") {
		t.Errorf("a condition that is not a bool: %v", err)
	}
}
