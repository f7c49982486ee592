package httpapi

import (
	"net/http"
	"testing"

	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/memindex"
)

// TestIndexEvents_CountedByThePushSource: each applied POST /v1/index/events batch is counted
// by the index's push source with its result (the parse failures and skipped events included),
// a refused body is not.
func TestIndexEvents_CountedByThePushSource(t *testing.T) {
	ix, err := index.New(memindex.New(), []index.TableSpec{{DB: "db1", Table: "table1", Key: "id", DeleteColumn: "yn",
		Columns:    []index.Column{{Name: "id", Type: index.TypeLong}, {Name: "lastAddrId", Type: index.TypeInt}, {Name: "categoryId", Type: index.TypeInt}},
		Dimensions: [][]index.Part{{{Code: "las", Column: "lastAddrId"}, {Code: "cat", Column: "categoryId"}}}}}, index.Options{})
	if err != nil {
		t.Fatal(err)
	}
	push := index.NewPushSource()
	a := newTestAPI(t, func(_ *Config, d *Deps) { d.Index, d.IndexPush = ix, push })
	body := `{"format":"canal","events":[
	 {"data":[{"id":"1","lastAddrId":"72","categoryId":"870","yn":"1"}],"database":"db1","table":"table1","type":"INSERT","es":1700000000000,"id":1,"isDdl":false},
	 {"data":[{"id":"2","lastAddrId":"72","categoryId":"870","yn":"1"}],"database":"db9","table":"other","type":"INSERT","es":1700000000000,"id":1,"isDdl":false},
	 "not an event"]}`
	for range 2 {
		if r := a.do(http.MethodPost, "/v1/index/events", body); r.status != http.StatusOK {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
	}
	if r := a.do(http.MethodPost, "/v1/index/events", `{"format":"nope","events":[]}`); r.status != http.StatusBadRequest {
		t.Fatalf("unknown format: %d %s", r.status, r.body)
	}
	want := index.PushDetail{Batches: 2, Applied: 1, Stale: 1, Skipped: 2, Failed: 2}
	if st := push.Status(); st.Detail != want || st.Events != 1 {
		t.Fatalf("push status = %+v, want %+v", st, want)
	}
}
