package index

import (
	"strings"
	"testing"
)

func TestParseEvents_Canal(t *testing.T) {
	body := `[
	 {"data":[{"id":"1","lastAddrId":"72","yn":"1"},{"id":"2","lastAddrId":null,"yn":"1"}],"database":"db1","table":"table1",
	  "type":"UPDATE","es":1700000000000,"ts":1700000000123,"id":7,"isDdl":false,"old":[{"lastAddrId":"71"}],"pkNames":["id"]},
	 {"data":null,"database":"db1","table":"table1","type":"ALTER","es":1700000000000,"id":8,"isDdl":true,"sql":"ALTER TABLE ..."},
	 {"data":[{"id":"3"}],"database":"db1","table":"table1","type":"DELETE","es":1700000001000,"id":9,"isDdl":false},
	 {"data":[{"id":"4"}],"database":"db1","table":"table1","type":"INSERT","id":10}
	]`
	p, err := ParseEvents(FormatCanal, []byte(body), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Changes) != 3 || p.Skipped != 1 || len(p.Errors) != 1 || !strings.Contains(p.Errors[0], "event 3") {
		t.Fatalf("parsed %+v", p)
	}
	c := p.Changes
	if c[0].Op != OpUpsert || *c[0].Row["lastAddrId"] != "72" || c[1].Row["lastAddrId"] != nil || c[2].Op != OpDelete {
		t.Fatalf("changes %+v", c)
	}
	if !(c[0].Version < c[1].Version && c[1].Version < c[2].Version) || c[0].Version != TimeVersion(1700000000000, 7, 0, 0) {
		t.Fatalf("versions %s %s %s", c[0].Version, c[1].Version, c[2].Version)
	}
}

func TestParseEvents_Debezium(t *testing.T) {
	body := `[
	 {"schema":{},"payload":{"before":null,"after":{"id":1,"name":"a","price":12.5,"ok":true},
	  "source":{"db":"shop","table":"items","sequence":"[\"100\",\"120\"]","lsn":120,"ts_ms":1700000000000},"op":"c","ts_ms":1700000000100}},
	 {"before":{"id":1},"after":null,"source":{"db":"shop","table":"items","file":"mysql-bin.000042","pos":777,"row":2},"op":"d"},
	 {"before":null,"after":{"id":2},"source":{"db":"shop","table":"items","lsn":5},"op":"r"},
	 {"before":null,"after":null,"source":{"db":"shop","table":"items","lsn":5},"op":"u"},
	 {"schema":{},"payload":null}
	]`
	p, err := ParseEvents(FormatDebezium, []byte(body), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Changes) != 3 || len(p.Errors) != 1 || p.Skipped != 1 {
		t.Fatalf("parsed %+v", p)
	}
	c := p.Changes
	if c[0].Version != PostgresVersion(100, 120) || *c[0].Row["price"] != "12.5" || *c[0].Row["ok"] != "true" || *c[0].Row["name"] != "a" {
		t.Fatalf("pg change %+v", c[0])
	}
	if c[1].Op != OpDelete || c[1].Version != BinlogVersion(42, 777, 2) || *c[1].Row["id"] != "1" {
		t.Fatalf("mysql delete %+v", c[1])
	}
	if c[2].Op != OpUpsert || c[2].Version != PostgresVersion(5, 5) {
		t.Fatalf("snapshot %+v", c[2])
	}
}

func TestParseEvents_NativeAndErrors(t *testing.T) {
	body := `[{"db":"d","table":"t","op":"insert","row":{"id":"1","n":5},"version":{"commitLsn":"0/20","lsn":"0/18"}},
	 {"db":"d","table":"t","op":"merge","row":{"id":"1"},"version":{"tsMs":1}},
	 {"db":"d","table":"t","op":"delete","row":{"id":"1"},"version":{}}]`
	p, err := ParseEvents(FormatNative, []byte(body), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Changes) != 1 || len(p.Errors) != 2 || p.Changes[0].Version != PostgresVersion(0x20, 0x18) || *p.Changes[0].Row["n"] != "5" {
		t.Fatalf("parsed %+v", p)
	}
	if _, err := ParseEvents("avro", []byte(`[]`), 0); err == nil {
		t.Error("unknown format accepted")
	}
	if _, err := ParseEvents(FormatNative, []byte(`{}`), 0); err == nil {
		t.Error("a non-array body accepted")
	}
}
