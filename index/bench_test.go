package index_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/memindex"
)

// benchTable is the seed's table with a decimal, a float and a date-time column, the shape the
// bench events below change.
func benchTable() index.TableSpec {
	return index.TableSpec{DB: "db1", Table: "table1", Key: "id", DeleteColumn: "yn",
		Columns: []index.Column{{Name: "id", Type: index.TypeLong}, {Name: "provinceId", Type: index.TypeInt},
			{Name: "cityId", Type: index.TypeInt}, {Name: "lastAddrId", Type: index.TypeInt}, {Name: "categoryId", Type: index.TypeInt},
			{Name: "brandId", Type: "int?"}, {Name: "price", Type: index.TypeDecimal}, {Name: "weight", Type: index.TypeFloat},
			{Name: "name", Type: index.TypeString}, {Name: "updated", Type: index.TypeDateTime}},
		Dimensions: [][]index.Part{{{Code: "las", Column: "lastAddrId"}, {Code: "cat", Column: "categoryId"}, {Code: "bra", Column: "brandId"}},
			{{Code: "las", Column: "lastAddrId"}, {Code: "cat", Column: "categoryId"}}}}
}

// benchCanal is a Canal flat message of one row, every value a string as Canal writes them.
func benchCanal(i int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"data":[{"id":"%d","provinceId":"1","cityId":"72","lastAddrId":"72","categoryId":"%d","brandId":"3987","price":"12.50","weight":"0.1","name":"jacket","updated":"2023-11-14 22:13:20","yn":"1"}],"database":"db1","es":1700000000000,"id":%d,"isDdl":false,"mysqlType":{"id":"bigint"},"old":null,"pkNames":["id"],"sql":"","table":"table1","ts":1700000000100,"type":"INSERT"}`,
		i, 870+i%8, i))
}

// benchDebezium is a Debezium MySQL envelope of one row without a schema.
func benchDebezium(i int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"before":null,"after":{"id":%d,"provinceId":1,"cityId":72,"lastAddrId":72,"categoryId":%d,"brandId":3987,"price":"12.50","weight":0.1,"name":"jacket","updated":"2023-11-14T22:13:20Z","yn":1},"source":{"version":"2.7.0.Final","connector":"mysql","name":"dbserver1","ts_ms":1700000000000,"snapshot":"false","db":"db1","table":"table1","server_id":223344,"file":"mysql-bin.000003","pos":%d,"row":0,"thread":7},"op":"c","ts_ms":1700000000100}`,
		i, 870+i%8, 154+i))
}

// benchDebeziumSchema is a Debezium MySQL envelope of one row with its schema (the JSON
// converter's schemas.enable=true): a precise Decimal, a Timestamp, the float as a double.
func benchDebeziumSchema(i int) json.RawMessage {
	field := func(typ, name, col string) string {
		if name != "" {
			name = `,"name":"` + name + `"`
		}
		return `{"type":"` + typ + `","optional":true` + name + `,"field":"` + col + `"}`
	}
	image := `{"type":"struct","fields":[` + field("int64", "", "id") + `,` + field("int32", "", "provinceId") + `,` + field("int32", "", "cityId") + `,` +
		field("int32", "", "lastAddrId") + `,` + field("int32", "", "categoryId") + `,` + field("int32", "", "brandId") + `,` +
		`{"type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2","connect.decimal.precision":"10"},"field":"price"},` +
		field("double", "", "weight") + `,` + field("string", "", "name") + `,` + field("int64", "io.debezium.time.Timestamp", "updated") + `,` + field("int32", "", "yn") +
		`],"optional":true,"name":"dbserver1.db1.table1.Value","field":"%s"}`
	source := `{"type":"struct","fields":[` + field("string", "", "version") + `,` + field("string", "", "connector") + `,` + field("int64", "", "ts_ms") + `,` +
		field("string", "", "db") + `,` + field("string", "", "table") + `,` + field("string", "", "file") + `,` + field("int64", "", "pos") + `,` + field("int32", "", "row") +
		`],"optional":false,"name":"io.debezium.connector.mysql.Source","field":"source"}`
	schema := `{"type":"struct","fields":[` + fmt.Sprintf(image, "before") + `,` + fmt.Sprintf(image, "after") + `,` + source + `,` + field("string", "", "op") + `,` +
		field("int64", "", "ts_ms") + `],"optional":false,"name":"dbserver1.db1.table1.Envelope"}`
	return json.RawMessage(fmt.Sprintf(`{"schema":%s,"payload":{"before":null,"after":{"id":%d,"provinceId":1,"cityId":72,"lastAddrId":72,"categoryId":%d,"brandId":3987,"price":"BOI=","weight":0.10000000149011612,"name":"jacket","updated":1700000000000,"yn":1},"source":{"version":"2.7.0.Final","connector":"mysql","ts_ms":1700000000000,"db":"db1","table":"table1","file":"mysql-bin.000003","pos":%d,"row":0},"op":"c","ts_ms":1700000000100}}`,
		schema, i, 870+i%8, 154+i))
}

// BenchmarkParseEvent reads one event of each format a source delivers.
func BenchmarkParseEvent(b *testing.B) {
	for _, f := range []struct {
		name, format string
		event        func(int) json.RawMessage
	}{{"canal", index.FormatCanal, benchCanal}, {"debezium", index.FormatDebezium, benchDebezium}, {"debezium-schema", index.FormatDebezium, benchDebeziumSchema}} {
		b.Run(f.name, func(b *testing.B) {
			events := make([]json.RawMessage, 256)
			for i := range events {
				events[i] = f.event(i)
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if _, _, err := index.ParseEvent(f.format, events[i%len(events)], uint64(i)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkApply applies batches of 256 parsed changes to the memory store: the conversion of
// every column, the row JSON and the index keys, without Redis.
func BenchmarkApply(b *testing.B) {
	for _, f := range []struct {
		name, format string
		event        func(int) json.RawMessage
	}{{"canal", index.FormatCanal, benchCanal}, {"debezium", index.FormatDebezium, benchDebezium}, {"debezium-schema", index.FormatDebezium, benchDebeziumSchema}} {
		b.Run(f.name, func(b *testing.B) {
			ix, err := index.New(memindex.New(), []index.TableSpec{benchTable()}, index.Options{})
			if err != nil {
				b.Fatal(err)
			}
			raw := make([]json.RawMessage, 256)
			for i := range raw {
				raw[i] = f.event(i)
			}
			p, err := index.ParseEventList(f.format, raw, 0)
			if err != nil || len(p.Changes) != len(raw) {
				b.Fatal(err, p.Errors)
			}
			b.ReportAllocs()
			ctx := context.Background()
			for i := 0; b.Loop(); i++ {
				for j := range p.Changes {
					p.Changes[j].Version = index.TimeVersion(int64(1+i), 0, uint64(j), 0)
				}
				if res, err := ix.Apply(ctx, p.Changes); err != nil || res.Applied != len(p.Changes) {
					b.Fatal(err, res)
				}
			}
		})
	}
}
