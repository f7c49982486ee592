package index_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redstate/redstate/index"
)

// fixtureEvent reads a testdata file holding one JSON event (see testdata/*/SOURCE.md).
func fixtureEvent(t testing.TB, path ...string) json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(append([]string{"testdata"}, path...)...))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// parseOne parses one Debezium event into its single change.
func parseOne(t testing.TB, raw json.RawMessage) index.Change {
	t.Helper()
	changes, skipped, err := index.ParseEvent(index.FormatDebezium, raw, 0)
	if err != nil || skipped || len(changes) != 1 {
		t.Fatalf("ParseEvent: %v, %v, %v", changes, skipped, err)
	}
	return changes[0]
}

// TestDebeziumFixture_PreciseDecimalAndMicroTimestamp: dvdrental's payment 32098 as
// Debezium's PostgreSQL connector wrote it with its schema (decimal.handling.mode precise, the
// default): amount "ASs=" (Decimal, scale 2) is 2.99, payment_date 1179150269996577
// (MicroTimestamp, a timestamp without time zone) is 2007-05-14T13:44:29.996577; stored so, and
// the index key of payment_date holds the value the row holds.
func TestDebeziumFixture_PreciseDecimalAndMicroTimestamp(t *testing.T) {
	spec := index.TableSpec{DB: "dvdrental", Table: "payment", Key: "payment_id",
		Columns: []index.Column{{Name: "payment_id", Type: index.TypeLong}, {Name: "customer_id", Type: index.TypeInt},
			{Name: "amount", Type: index.TypeDecimal}, {Name: "payment_date", Type: index.TypeDateTime}},
		Dimensions: [][]index.Part{{{Code: "at", Column: "payment_date"}}, {{Code: "cus", Column: "customer_id"}}}}
	raw := fixtureEvent(t, "debezium", "floodplain-decimalwithscale.json")
	var env struct {
		Payload struct {
			Source map[string]any `json:"source"`
		} `json:"payload"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatal(err)
	}
	if env.Payload.Source["db"] != "dvdrental" || env.Payload.Source["table"] != "payment" {
		t.Fatalf("source %v", env.Payload.Source)
	}
	ix := fixtureIndex(t, spec, index.Options{}, index.FormatDebezium, []json.RawMessage{raw})
	rows := rowsOf(t, ix, spec.DB, "payment", map[string]string{"cus": "264"})
	row := rows["32098"]
	if row["amount"] != "2.99" || row["payment_date"] != "2007-05-14T13:44:29.996577" {
		t.Fatalf("row %v", row)
	}
	byTime := rowsOf(t, ix, spec.DB, "payment", map[string]string{"at": "2007-05-14T13:44:29.996577"})
	if len(byTime) != 1 || byTime["32098"] == nil {
		t.Fatalf("the key of payment_date does not hold the row's value: %v", byTime)
	}
}

// TestDebeziumFixture_DateIsADay: io.debezium.time.Date counts days: a Date column's value
// and its key are that day (the 19279 was stored as 1970-01-01T00:00:19.279Z and keyed
// d-19279); MicroTimestamp 1665791731989360 is 2022-10-14T23:55:31.98936, a local date-time.
func TestDebeziumFixture_DateIsADay(t *testing.T) {
	spec := index.TableSpec{DB: "ch_benchmark_db", Table: "t", Key: "id",
		Columns:    []index.Column{{Name: "id", Type: index.TypeLong}, {Name: "ts", Type: index.TypeDateTime}, {Name: "d", Type: index.TypeDateTime}},
		Dimensions: [][]index.Part{{{Code: "d", Column: "d"}}}}
	// The schema and values of the report (Debezium 1.9.5, PostgreSQL).
	event := `{"schema":{"type":"struct","fields":[{"type":"struct","fields":[{"type":"int64","optional":false,"field":"id"},{"type":"int64","optional":true,"name":"io.debezium.time.MicroTimestamp","version":1,"field":"ts"},{"type":"int32","optional":true,"name":"io.debezium.time.Date","version":1,"field":"d"},{"type":"int64","optional":true,"name":"io.debezium.time.MicroTime","version":1,"field":"t"}],"optional":true,"name":"postgres.public.t.Value","field":"after"}],"optional":false,"name":"postgres.public.t.Envelope"},` +
		`"payload":{"before":null,"after":{"id":1,"ts":1665791731989360,"d":19279,"t":86131989360},"source":{"version":"1.9.5.Final","connector":"postgresql","name":"postgres","ts_ms":1665806169262,"snapshot":"true","db":"ch_benchmark_db","sequence":"[null,\"25503568\"]","schema":"public","table":"t","txId":4499,"lsn":25503568,"xmin":null},"op":"r","ts_ms":1665806169263,"transaction":null}}`
	ch := parseOne(t, json.RawMessage(event))
	if *ch.Row["ts"] != "2022-10-14T23:55:31.98936" || *ch.Row["d"] != "2022-10-14" || *ch.Row["t"] != "23:55:31.98936" {
		t.Fatalf("row %v %v %v", *ch.Row["ts"], *ch.Row["d"], *ch.Row["t"])
	}
	ix := fixtureIndex(t, spec, index.Options{}, index.FormatDebezium, []json.RawMessage{json.RawMessage(event)})
	rows := rowsOf(t, ix, spec.DB, "t", map[string]string{"d": "2022-10-14"})
	if rows["1"]["ts"] != "2022-10-14T23:55:31.98936" || rows["1"]["d"] != "2022-10-14T00:00:00" {
		t.Fatalf("rows by d=2022-10-14: %v", rows)
	}
}

// TestDebeziumFixture_FloatWrittenAsDouble: Debezium's MySQL connector writes a FLOAT as the
// double of its bits (3.140000104904175); a float column stores the float, 3.14 (Flink's
// expected rows).
func TestDebeziumFixture_FloatWrittenAsDouble(t *testing.T) {
	spec := index.TableSpec{DB: "inventory", Table: "products", Key: "id",
		Columns:    []index.Column{{Name: "id", Type: index.TypeLong}, {Name: "name", Type: index.TypeString}, {Name: "weight", Type: index.TypeFloat}},
		Dimensions: [][]index.Part{{{Code: "w", Column: "weight"}}}}
	ix := fixtureIndex(t, spec, index.Options{}, index.FormatDebezium, fixtureLines(t, "debezium", "flink-debezium-data-schema-include.txt"))
	for w, id := range map[string]string{"3.14": "101", "0.8": "103"} {
		rows := rowsOf(t, ix, "inventory", "products", map[string]string{"w": w})
		if rows[id]["weight"] != json.Number(w) {
			t.Errorf("w=%s: %v", w, rows)
		}
	}
}

// TestDebeziumFixture_DocumentationEvents: the create, update and delete examples of Debezium's
// MySQL and PostgreSQL documentation apply in order, and a logical decoding message ("op":"m")
// is not a row change: skipped, not an error.
func TestDebeziumFixture_DocumentationEvents(t *testing.T) {
	for _, c := range []struct {
		db, conn string
		id       string
	}{{"inventory", "mysql", "1004"}, {"postgres", "postgresql", "1"}} {
		spec := index.TableSpec{DB: c.db, Table: "customers", Key: "id",
			Columns:    []index.Column{{Name: "id", Type: index.TypeLong}, {Name: "first_name", Type: index.TypeString}, {Name: "last_name", Type: index.TypeString}},
			Dimensions: [][]index.Part{{{Code: "ln", Column: "last_name"}}}}
		var events []json.RawMessage
		for _, op := range []string{"create", "update"} {
			events = append(events, fixtureEvent(t, "debezium", c.conn+"-"+op+".json"))
		}
		ix := fixtureIndex(t, spec, index.Options{}, index.FormatDebezium, events)
		if rows := rowsOf(t, ix, c.db, "customers", map[string]string{"ln": "Kretchmar"}); rows[c.id]["first_name"] != "Anne Marie" {
			t.Fatalf("%s after create, update: %v", c.conn, rows)
		}
		if res, err := ix.Apply(context.Background(), []index.Change{parseOne(t, fixtureEvent(t, "debezium", c.conn+"-delete.json"))}); err != nil || res.Applied != 1 {
			t.Fatalf("%s delete: %+v %v", c.conn, res, err)
		}
		if rows := rowsOf(t, ix, c.db, "customers", map[string]string{"ln": "Kretchmar"}); len(rows) != 0 {
			t.Fatalf("%s after delete: %v", c.conn, rows)
		}
	}
	if _, skipped, err := index.ParseEvent(index.FormatDebezium, fixtureEvent(t, "debezium", "postgresql-message.json"), 0); err != nil || !skipped {
		t.Fatalf("op m: skipped %v, %v", skipped, err)
	}
}

// TestDebeziumFixture_SchemaTypes: the semantic types of genuine events with schemas are read
// by their schema: Timestamp (MySQL DATETIME, ms), MicroTimestamp, ZonedTimestamp, Uuid, Date
// and bytes.
func TestDebeziumFixture_SchemaTypes(t *testing.T) {
	ch := parseOne(t, fixtureEvent(t, "debezium", "floodplain-timestamp.json"))
	if *ch.Row["created_on"] != "2021-07-27T09:21:41" || *ch.Row["id"] != "274" {
		t.Errorf("timestamp.json: %v", *ch.Row["created_on"])
	}
	ch = parseOne(t, fixtureEvent(t, "debezium", "floodplain-timeslot.json"))
	if *ch.Row["start_time"] != "2022-10-20T11:40:00" || *ch.Row["end_time"] != "2022-10-20T12:40:00" ||
		*ch.Row["date_created"] != "2022-10-19T14:30:12.261837Z" || *ch.Row["id"] != "3b8fb0a2-72fb-4183-a017-8b7f00ba8d32" {
		t.Errorf("timeslot.json: %v %v %v", *ch.Row["start_time"], *ch.Row["end_time"], *ch.Row["date_created"])
	}
	ch = parseOne(t, fixtureEvent(t, "debezium", "floodplain-photo.json"))
	if *ch.Row["created"] != "2018-02-05" || !strings.HasPrefix(*ch.Row["data"], "\xff\xd8\xff\xe0") {
		t.Errorf("photo.json: %v %q", *ch.Row["created"], (*ch.Row["data"])[:4])
	}
	ch = parseOne(t, fixtureEvent(t, "debezium", "floodplain-delete_film_actor.json"))
	if ch.Op != index.OpDelete || *ch.Row["actor_id"] != "1" || *ch.Row["last_update"] != "1970-01-01T00:00:00" {
		t.Errorf("delete_film_actor.json: %+v", ch)
	}
}

// TestParseEvent_Truncates: Debezium's documented truncate events ("op":"t", MySQL and
// PostgreSQL) and a Canal TRUNCATE (a DDL to Canal: isDdl true, type TRUNCATE, no data) are
// truncates of their table at their place in the source, not unknown operations.
func TestParseEvent_Truncates(t *testing.T) {
	ch := parseOne(t, fixtureEvent(t, "debezium", "mysql-truncate.json"))
	if ch.Op != index.OpTruncate || ch.DB != "inventory" || ch.Table != "customers" || ch.Version != index.BinlogVersion(3, 484, 0) {
		t.Errorf("mysql truncate: %+v", ch)
	}
	ch = parseOne(t, fixtureEvent(t, "debezium", "postgresql-truncate.json"))
	if ch.Op != index.OpTruncate || ch.DB != "postgres" || ch.Table != "customers" || ch.Version != index.PostgresVersion(46523128, 46523128) {
		t.Errorf("postgresql truncate: %+v", ch)
	}
	canal := `{"data":null,"database":"inventory","es":1589373566000,"id":13,"isDdl":true,"mysqlType":null,"old":null,"pkNames":null,"sql":"TRUNCATE TABLE products2","sqlType":null,"table":"products2","ts":1589373566001,"type":"TRUNCATE"}`
	changes, skipped, err := index.ParseEvent(index.FormatCanal, json.RawMessage(canal), 7)
	if err != nil || skipped || len(changes) != 1 || changes[0].Op != index.OpTruncate || changes[0].Table != "products2" ||
		changes[0].Version != index.TimeVersion(1589373566000, 13, 7, 0) {
		t.Errorf("canal truncate: %+v %v %v", changes, skipped, err)
	}
}
