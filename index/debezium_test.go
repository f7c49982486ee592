package index

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestDebeziumSchema_EverySemanticType: each Debezium and Kafka Connect semantic type in an
// envelope's schema is read by Debezium's definition of it: dates as days, times of day in
// their unit, the local date-times (Timestamp, MicroTimestamp, NanoTimestamp and Kafka
// Connect's Timestamp: a DATETIME or TIMESTAMP WITHOUT TIME ZONE) without a zone, zoned ones as
// written, decimals from their unscaled two's-complement bytes, bytes from base64.
func TestDebeziumSchema_EverySemanticType(t *testing.T) {
	cases := []struct {
		typ, name, params, value, want string
	}{
		{"int32", "io.debezium.time.Date", "", "19279", "2022-10-14"},
		{"int32", "io.debezium.time.Date", "", "-1", "1969-12-31"},
		{"int32", "org.apache.kafka.connect.data.Date", "", "0", "1970-01-01"},
		{"int32", "io.debezium.time.Time", "", "86131989", "23:55:31.989"},
		{"int32", "org.apache.kafka.connect.data.Time", "", "40271000", "11:11:11"},
		{"int64", "io.debezium.time.MicroTime", "", "86131989360", "23:55:31.98936"},
		{"int64", "io.debezium.time.MicroTime", "", "-3600000000", "-01:00:00"},
		{"int64", "io.debezium.time.NanoTime", "", "40271000000001", "11:11:11.000000001"},
		{"int64", "io.debezium.time.Timestamp", "", "1529476623000", "2018-06-20T06:37:03"},
		{"int64", "io.debezium.time.Timestamp", "", "-1", "1969-12-31T23:59:59.999"},
		{"int64", "org.apache.kafka.connect.data.Timestamp", "", "1529476623000", "2018-06-20T06:37:03"},
		{"int64", "io.debezium.time.MicroTimestamp", "", "1665791731989360", "2022-10-14T23:55:31.98936"},
		{"int64", "io.debezium.time.NanoTimestamp", "", "1665791731989360123", "2022-10-14T23:55:31.989360123"},
		{"string", "io.debezium.time.ZonedTimestamp", "", `"2018-06-20T13:37:03Z"`, "2018-06-20T13:37:03Z"},
		{"string", "io.debezium.time.ZonedTime", "", `"11:11:11.00001Z"`, "11:11:11.00001Z"},
		{"string", "io.debezium.time.IsoDate", "", `"2017-09-15Z"`, "2017-09-15"},
		{"string", "io.debezium.time.IsoTime", "", `"04:05:11.789Z"`, "04:05:11.789"},
		{"string", "io.debezium.time.IsoTimestamp", "", `"2019-07-09T02:28:57.123456Z"`, "2019-07-09T02:28:57.123456"},
		{"int32", "io.debezium.time.Year", "", "2022", "2022"},
		{"bytes", "org.apache.kafka.connect.data.Decimal", `{"scale":"0","connect.decimal.precision":"10"}`, `"JxA="`, "10000"},
		{"bytes", "org.apache.kafka.connect.data.Decimal", `{"scale":"2"}`, `"MDk="`, "123.45"},
		{"bytes", "org.apache.kafka.connect.data.Decimal", `{"scale":"2"}`, `"/w=="`, "-0.01"},
		{"bytes", "org.apache.kafka.connect.data.Decimal", `{"scale":"2"}`, `"2PA="`, "-100.00"},
		{"bytes", "org.apache.kafka.connect.data.Decimal", `{"scale":"3"}`, `"AA=="`, "0.000"},
		{"bytes", "org.apache.kafka.connect.data.Decimal", `{"scale":"-2"}`, `"Bw=="`, "700"},
		{"struct", "io.debezium.data.VariableScaleDecimal", "", `{"scale":2,"value":"MDk="}`, "123.45"},
		{"struct", "io.debezium.data.VariableScaleDecimal", "", `{"scale":0,"value":"/w=="}`, "-1"},
		{"string", "io.debezium.data.Json", "", `"{\"k1\": \"v1\"}"`, `{"k1": "v1"}`},
		{"string", "io.debezium.data.Enum", `{"allowed":"G,PG"}`, `"PG"`, "PG"},
		{"string", "io.debezium.data.Uuid", "", `"60f14fe2-f857-404a-b586-3b5375b3259f"`, "60f14fe2-f857-404a-b586-3b5375b3259f"},
		{"bytes", "", "", `"ASNFZ4mrze8="`, "\x01\x23\x45\x67\x89\xab\xcd\xef"},
		{"double", "", "", "3.140000104904175", "3.140000104904175"},
	}
	for _, c := range cases {
		field := `{"type":"` + c.typ + `","optional":true,"field":"v"`
		if c.name != "" {
			field += `,"name":"` + c.name + `"`
		}
		if c.params != "" {
			field += `,"parameters":` + c.params
		}
		field += "}"
		event := `{"schema":{"type":"struct","fields":[{"type":"struct","fields":[{"type":"int32","field":"id"},` + field + `],"field":"after"}]},` +
			`"payload":{"after":{"id":1,"v":` + c.value + `},"source":{"db":"d","table":"t","file":"b.000001","pos":4,"row":0},"op":"c"}}`
		changes, _, err := ParseEvent(FormatDebezium, json.RawMessage(event), 0)
		if err != nil || len(changes) != 1 || changes[0].Row["v"] == nil || changes[0].Encoding != EncodingDebeziumSchema {
			t.Errorf("%s %s: %v, %v", c.name, c.value, changes, err)
			continue
		}
		if got := *changes[0].Row["v"]; got != c.want {
			t.Errorf("%s %s %s: %q, want %q", c.typ, c.name, c.value, got, c.want)
		}
	}
	for _, bad := range []struct{ typ, name, params, value, want string }{
		{"bytes", "org.apache.kafka.connect.data.Decimal", `{}`, `"JxA="`, "has no scale"},
		{"bytes", "org.apache.kafka.connect.data.Decimal", `{"scale":"0"}`, `"not base64!"`, "is not base64"},
		{"int32", "io.debezium.time.Date", "", `"x"`, "is not an integer"},
		{"int64", "io.debezium.time.Timestamp", "", "999999999999999999", "out of the years"},
	} {
		event := `{"schema":{"type":"struct","fields":[{"type":"struct","fields":[{"type":"` + bad.typ + `","name":"` + bad.name + `","parameters":` +
			map[bool]string{true: "null", false: bad.params}[bad.params == ""] + `,"field":"v"}],"field":"after"}]},` +
			`"payload":{"after":{"v":` + bad.value + `},"source":{"db":"d","table":"t","file":"b.000001","pos":4},"op":"c"}}`
		if _, _, err := ParseEvent(FormatDebezium, json.RawMessage(event), 0); err == nil || !strings.Contains(err.Error(), bad.want) || !strings.Contains(err.Error(), "column v") {
			t.Errorf("%s %s: %v; want an error %q naming the column", bad.name, bad.value, err, bad.want)
		}
	}
}

// TestDebeziumSettings_Units: without a schema, a number in a temporal column is read in the
// unit of the connector's time.precision.mode and the column's declared precision.
func TestDebeziumSettings_Units(t *testing.T) {
	cases := []struct {
		mode, typ, in, want string
	}{
		{TimeAdaptive, "datetime", "1529476623000", "2018-06-20T06:37:03"},
		{TimeAdaptive, "datetime(3)", "1529476623123", "2018-06-20T06:37:03.123"},
		{TimeAdaptive, "datetime(6)", "1665791731989360", "2022-10-14T23:55:31.98936"},
		{TimeAdaptive, "datetime(9)", "1665791731989360123", "2022-10-14T23:55:31.989360123"},
		{TimeAdaptiveMicroseconds, "datetime(6)", "1665791731989360", "2022-10-14T23:55:31.98936"},
		{TimeConnect, "datetime(6)", "1529476623000", "2018-06-20T06:37:03"},
		{TimeMicroseconds, "datetime", "1665791731989360", "2022-10-14T23:55:31.98936"},
		{TimeNanoseconds, "datetime", "1665791731989360123", "2022-10-14T23:55:31.989360123"},
		{TimeAdaptive, "datetime", "2018-06-20T13:37:03Z", "2018-06-20T13:37:03Z"},
		{TimeIsoString, "datetime", "2019-07-09T02:28:57.123456Z", "2019-07-09T02:28:57.123456Z"},
		{TimeAdaptive, "date", "19279", "2022-10-14"},
		{TimeConnect, "date", "-1", "1969-12-31"},
		{TimeIsoString, "date", "2017-09-15Z", "2017-09-15"},
		{TimeAdaptive, "time(3)", "86131989", "23:55:31.989"},
		{TimeAdaptive, "time", "86131989360", "23:55:31.98936"},
		{TimeAdaptive, "time(6)", "86131989360", "23:55:31.98936"},
		{TimeAdaptiveMicroseconds, "time(0)", "40271000000", "11:11:11"},
		{TimeConnect, "time(6)", "40271000", "11:11:11"},
		{TimeNanoseconds, "time", "40271000000001", "11:11:11.000000001"},
		{TimeAdaptive, "time", "11:11:11.000010Z", "11:11:11.00001Z"},
		{TimeAdaptive, "time", "838:59:59", "838:59:59"},
		{TimeAdaptive, "datetime", "1665791731989360", "error"},
		{TimeAdaptive, "time(3)", "86131989360", "error"},
	}
	for _, c := range cases {
		dbz := DebeziumSettings{TimePrecisionMode: c.mode}.withDefaults()
		col := compileColumn(Column{Name: "c", Type: ColumnType(c.typ)})
		got, err := convert(&col, Str(c.in), &valueForm{enc: EncodingDebezium, debezium: &dbz})
		if c.want == "error" {
			if err == nil || !strings.Contains(err.Error(), "declare the column's precision") {
				t.Errorf("%s %s %s: %v, %v; want an error naming the fix", c.mode, c.typ, c.in, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s %s %s: %v, %v; want %s", c.mode, c.typ, c.in, got, err, c.want)
		}
	}
	if err := (DebeziumSettings{TimePrecisionMode: "adaptive_micro"}).Validate(); err == nil {
		t.Error("an unknown mode is accepted")
	}
	if err := (DebeziumSettings{DecimalHandlingMode: "exact"}).Validate(); err == nil {
		t.Error("an unknown decimal mode is accepted")
	}
}

// TestColumnType_Precision: declared precisions parse, and wrong ones are configuration errors.
func TestColumnType_Precision(t *testing.T) {
	for typ, want := range map[ColumnType]columnType{
		"datetime(6)":    {base: TypeDateTime, precision: 6, scale: -1},
		"datetime(6)?":   {base: TypeDateTime, nullable: true, precision: 6, scale: -1},
		"decimal(10,2)":  {base: TypeDecimal, precision: 10, scale: 2},
		"decimal(10)":    {base: TypeDecimal, precision: 10, scale: 0},
		"decimal( 5, 5)": {base: TypeDecimal, precision: 5, scale: 5},
		"time":           {base: TypeTime, precision: -1, scale: -1},
		"date?":          {base: TypeDate, nullable: true, precision: -1, scale: -1},
	} {
		if got, ok := typ.parse(); !ok || got != want {
			t.Errorf("%s: %+v %v, want %+v", typ, got, ok, want)
		}
	}
	for _, typ := range []ColumnType{"datetime(10)", "int(11)", "decimal(2,3)", "decimal(0)", "time(6,1)", "datetime(6", "date(1)", "decimal(a,b)"} {
		if _, ok := typ.parse(); ok {
			t.Errorf("%s accepted", typ)
		}
	}
}

// TestDebeziumSettings_DecimalModes: without a schema, decimal.handling.mode says what a
// decimal column's string is: under precise the base64 of the unscaled integer at the declared
// scale ("JxA=" 100.00), under string and double the number itself ("1250" stays 1250, which
// precise would read as base64).
func TestDebeziumSettings_DecimalModes(t *testing.T) {
	col := compileColumn(Column{Name: "price", Type: "decimal(10,2)"})
	for _, c := range []struct{ mode, in, want string }{
		{DecimalPrecise, "JxA=", "100.00"},
		{DecimalPrecise, `{"scale":1,"value":"AQ=="}`, "0.1"},
		{DecimalString, "1250", "1250"},
		{DecimalString, "12.50", "12.50"},
		{DecimalDouble, "12.5", "12.5"},
		{DecimalDouble, "-1.5E-7", "-1.5E-7"},
	} {
		dbz := DebeziumSettings{DecimalHandlingMode: c.mode}.withDefaults()
		got, err := convert(&col, Str(c.in), &valueForm{enc: EncodingDebezium, debezium: &dbz})
		if err != nil || got != c.want {
			t.Errorf("%s %s: %v, %v; want %s", c.mode, c.in, got, err, c.want)
		}
	}
	dbz := DefaultDebeziumSettings()
	if got, err := convert(&col, Str("12.50"), &valueForm{enc: EncodingDebezium, debezium: &dbz}); err == nil {
		t.Errorf("precise read 12.50 as base64: %v", got)
	}
}
