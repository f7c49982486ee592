package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
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
