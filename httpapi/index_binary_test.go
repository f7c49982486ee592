package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/indextest"
	"github.com/redstate/redstate/index/memindex"
)

// TestIndexBytes_QueryByTheStoredText: the binary row posted in every event format's form
// (indextest.BinaryEvents, each read with its binary-handling-mode) is answered by GET
// /v1/index/shop/blobs?code=AP%2BA, the standard base64 of its code percent-encoded, with the
// row the other sources store (indextest.BinaryRowJSON under id AP+AAA==); an unencoded '+',
// which a query string reads as a space, is a 400 saying so.
func TestIndexBytes_QueryByTheStoredText(t *testing.T) {
	for _, e := range indextest.BinaryEvents("shop") {
		t.Run(e.Name, func(t *testing.T) {
			ix, err := index.New(memindex.New(), []index.TableSpec{indextest.BinaryTable("shop")},
				index.Options{Debezium: index.DebeziumSettings{BinaryHandlingMode: e.Mode}})
			if err != nil {
				t.Fatal(err)
			}
			a := newTestAPI(t, func(_ *Config, d *Deps) { d.Index = ix })
			body, _ := json.Marshal(map[string]any{"format": e.Format, "events": []json.RawMessage{json.RawMessage(e.Event)}})
			r := a.do(http.MethodPost, "/v1/index/events", string(body))
			var res index.Result
			if r.status != http.StatusOK || json.Unmarshal(r.body, &res) != nil || res.Applied != 1 {
				t.Fatalf("POST events: %d %s", r.status, r.body)
			}
			r = a.do(http.MethodGet, "/v1/index/shop/blobs?code=AP%2BA", "")
			want := `{"db":"shop","table":"blobs","rows":{"AP+AAA==":` + indextest.BinaryRowJSON + `}}`
			if r.status != http.StatusOK || strings.TrimSpace(string(r.body)) != want {
				t.Fatalf("GET ?code=AP%%2BA: %d %s, want %s", r.status, r.body, want)
			}
			r = a.do(http.MethodGet, "/v1/index/shop/blobs?code=AP+A", "")
			if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "write it %2B") {
				t.Fatalf("GET ?code=AP+A: %d %s", r.status, r.body)
			}
		})
	}
}
