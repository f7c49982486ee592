package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/memindex"
)

// newIndexAPI starts an API over a memory index of the seed's table (id, lastAddrId, categoryId).
func newIndexAPI(t *testing.T) (*testAPI, *index.Indexer) {
	t.Helper()
	ix, err := index.New(memindex.New(), []index.TableSpec{{DB: "db1", Table: "table1", Key: "id", DeleteColumn: "yn",
		Columns:    []index.Column{{Name: "id", Type: index.TypeLong}, {Name: "lastAddrId", Type: index.TypeInt}, {Name: "categoryId", Type: index.TypeInt}},
		Dimensions: [][]index.Part{{{Code: "las", Column: "lastAddrId"}, {Code: "cat", Column: "categoryId"}}}}}, index.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return newTestAPI(t, func(_ *Config, d *Deps) { d.Index = ix }), ix
}

// TestIndexEvents_DuplicateMemberFailsThatEventAlone: one event naming a member twice is
// refused alone (reported in errors, counted failed), the events around it are applied; the
// envelope itself is still checked strictly.
func TestIndexEvents_DuplicateMemberFailsThatEventAlone(t *testing.T) {
	a, ix := newIndexAPI(t)
	body := `{"format":"canal","events":[
	 {"data":[{"id":"1","lastAddrId":"72","categoryId":"870","yn":"1"}],"database":"db1","table":"table1","type":"INSERT","es":1700000000000,"id":1,"isDdl":false},
	 {"data":[{"id":"2","lastAddrId":"72","lastAddrId":"73","categoryId":"870","yn":"1"}],"database":"db1","table":"table1","type":"INSERT","es":1700000000000,"id":1,"isDdl":false},
	 {"data":[{"id":"3","lastAddrId":"72","categoryId":"870","yn":"1"}],"database":"db1","table":"table1","type":"INSERT","es":1700000000000,"id":1,"isDdl":false}]}`
	r := a.do(http.MethodPost, "/v1/index/events", body)
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var res index.Result
	if err := json.Unmarshal(r.body, &res); err != nil {
		t.Fatal(err)
	}
	if res.Applied != 2 || res.Failed != 1 || len(res.Errors) != 1 ||
		!strings.Contains(res.Errors[0], "event 1") || !strings.Contains(res.Errors[0], `duplicate member "lastAddrId"`) {
		t.Fatalf("result %+v", res)
	}
	rows, err := ix.Query(context.Background(), "db1", "table1", map[string]string{"las": "72", "cat": "870"})
	if err != nil || len(rows) != 2 || rows["1"] == nil || rows["3"] == nil {
		t.Fatalf("rows %v, %v", rows, err)
	}
	// A member named twice outside the events is still a 400 for the whole request.
	if r := a.do(http.MethodPost, "/v1/index/events", `{"format":"canal","format":"canal","events":[]}`); r.status != http.StatusBadRequest ||
		!strings.Contains(string(r.body), `duplicate member \"format\"`) {
		t.Fatalf("envelope duplicate: %d %s", r.status, r.body)
	}
}

// fixtureEvents reads events of index/testdata (see its SOURCE.md): a file of one event, or
// with lines one per line.
func fixtureEvents(t *testing.T, path string, lines bool) []json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "index", "testdata", path))
	if err != nil {
		t.Fatal(err)
	}
	if !lines {
		return []json.RawMessage{bytes.TrimSpace(b)}
	}
	var out []json.RawMessage
	for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		out = append(out, l)
	}
	return out
}

// TestIndexEvents_UpstreamMessages: genuine messages through POST /v1/index/events: Canal's flat
// messages of a MySQL FLOAT column (Flink's), Debezium's PostgreSQL payment row with its
// schema, and Debezium's documented MySQL create then truncate of a customer. Each ends as its
// project expects: weights 0.1 and 5.17, amount 2.99 at 2007-05-14T13:44:29.996577, the
// customer gone with the truncate; a replay of the create is stale.
func TestIndexEvents_UpstreamMessages(t *testing.T) {
	ix, err := index.New(memindex.New(), []index.TableSpec{
		{DB: "inventory", Table: "products2", Key: "id",
			Columns:    []index.Column{{Name: "id", Type: index.TypeLong}, {Name: "name", Type: index.TypeString}, {Name: "weight", Type: index.TypeFloat}},
			Dimensions: [][]index.Part{{{Code: "n", Column: "name"}}}},
		{DB: "dvdrental", Table: "payment", Key: "payment_id",
			Columns: []index.Column{{Name: "payment_id", Type: index.TypeLong}, {Name: "customer_id", Type: index.TypeInt},
				{Name: "amount", Type: index.TypeDecimal}, {Name: "payment_date", Type: index.TypeDateTime}},
			Dimensions: [][]index.Part{{{Code: "cus", Column: "customer_id"}}}},
		{DB: "inventory", Table: "customers", Key: "id",
			Columns:    []index.Column{{Name: "id", Type: index.TypeLong}, {Name: "last_name", Type: index.TypeString}},
			Dimensions: [][]index.Part{{{Code: "ln", Column: "last_name"}}}},
	}, index.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := newTestAPI(t, func(_ *Config, d *Deps) { d.Index = ix })
	post := func(format string, events []json.RawMessage) index.Result {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"format": format, "events": events})
		r := a.do(http.MethodPost, "/v1/index/events", string(body))
		var res index.Result
		if r.status != http.StatusOK || json.Unmarshal(r.body, &res) != nil {
			t.Fatalf("%s: %d %s", format, r.status, r.body)
		}
		return res
	}
	if res := post("canal", fixtureEvents(t, "canal/flink-canal-data.txt", true)); res.Failed != 0 || res.Skipped != 1 {
		t.Fatalf("canal: %+v", res)
	}
	if res := post("debezium", fixtureEvents(t, "debezium/floodplain-decimalwithscale.json", false)); res.Applied != 1 {
		t.Fatalf("payment: %+v", res)
	}
	customer := append(fixtureEvents(t, "debezium/mysql-create.json", false), fixtureEvents(t, "debezium/mysql-truncate.json", false)...)
	if res := post("debezium", customer); res.Applied != 2 || res.Truncated != 1 {
		t.Fatalf("create, truncate: %+v", res)
	}
	if res := post("debezium", customer[:1]); res.Stale != 1 {
		t.Fatalf("replayed create: %+v", res)
	}
	for _, c := range []struct {
		db, table string
		conds     map[string]string
		want      []string
	}{
		{"inventory", "products2", map[string]string{"n": "jacket"}, []string{`"weight":0.1`, `"weight":0.5`}},
		{"inventory", "products2", map[string]string{"n": "scooter"}, []string{`"weight":5.17`}},
		{"dvdrental", "payment", map[string]string{"cus": "264"}, []string{`"amount":"2.99"`, `"payment_date":"2007-05-14T13:44:29.996577"`}},
	} {
		rows, err := ix.Query(context.Background(), c.db, c.table, c.conds)
		if err != nil {
			t.Fatal(err)
		}
		all := ""
		for _, r := range rows {
			all += string(r)
		}
		for _, w := range c.want {
			if !strings.Contains(all, w) {
				t.Errorf("%s.%s %v: %s lacks %s", c.db, c.table, c.conds, all, w)
			}
		}
	}
	if rows, _ := ix.Query(context.Background(), "inventory", "customers", map[string]string{"ln": "Kretchmar"}); len(rows) != 0 {
		t.Errorf("customers after the truncate: %v", rows)
	}
}
