package cli

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/redistest"
)

// indexConfig declares the seed's example table (hash-tagged so it also runs on Cluster).
const indexConfig = `
index:
  tables:
    - db: db1
      table: table1
      key: id
      delete-column: yn
      hash-tag: true
      columns:
        - {name: id, type: long}
        - {name: lastAddrId, type: int}
        - {name: categoryId, type: int}
        - {name: brandId, type: "int?"}
      dimensions:
        - [{code: las, column: lastAddrId}, {code: cat, column: categoryId}, {code: bra, column: brandId}]
        - [{code: las, column: lastAddrId}, {code: cat, column: categoryId}]
`

// TestServe_IndexOverHTTP feeds Canal events (insert, DDL, a bad value, an update moving a row,
// a late update, a delete) through POST /v1/index/events and
// queries the result, on memory and on Redis.
func TestServe_IndexOverHTTP(t *testing.T) {
	for _, backend := range []string{"memory", "redis"} {
		t.Run(backend, func(t *testing.T) {
			args := []string{"--config", writeConfig(t, indexConfig)}
			if backend == "redis" {
				args = append(args, "--redis", redistest.StartStandalone(t).URL)
			}
			base, logs, _, _ := startServe(t, args...)
			if !strings.Contains(logs.String(), `"msg":"CDC index ready"`) {
				t.Fatalf("no index:\n%s", logs)
			}
			canal := `{"format":"canal","events":[
			  {"data":[{"id":"10001","lastAddrId":"72","categoryId":"870","brandId":"3987","yn":"1"},
			           {"id":"10002","lastAddrId":"72","categoryId":"870","brandId":"1","yn":"1"}],
			   "database":"db1","table":"table1","type":"INSERT","es":1700000000000,"id":1,"isDdl":false},
			  {"database":"db1","table":"table1","type":"ALTER","es":1700000000000,"id":2,"isDdl":true},
			  {"data":[{"id":"10003","lastAddrId":"x","categoryId":"870","yn":"1"}],"database":"db1","table":"table1","type":"INSERT","es":1700000000000,"id":3},
			  {"data":[{"id":"10002","lastAddrId":"72","categoryId":"999","brandId":"1","yn":"1"}],"database":"db1","table":"table1","type":"UPDATE","es":1700000001000,"id":4},
			  {"data":[{"id":"10001","lastAddrId":"72","categoryId":"870","brandId":"3987","yn":"1"}],"database":"db1","table":"table1","type":"UPDATE","es":1690000000000,"id":0}
			]}`
			status, body := request(t, http.MethodPost, base+"/v1/index/events", canal)
			if status != http.StatusOK || !strings.Contains(body, `"applied":3`) || !strings.Contains(body, `"stale":1`) ||
				!strings.Contains(body, `"skipped":1`) || !strings.Contains(body, `"failed":1`) || !strings.Contains(body, "lastAddrId") {
				t.Fatalf("events = %d %s", status, body)
			}
			status, body = request(t, http.MethodGet, base+"/v1/index/db1/table1?las=72&cat=870", "")
			if status != http.StatusOK || !strings.Contains(body, `"10001"`) || strings.Contains(body, `"10002"`) {
				t.Fatalf("query = %d %s", status, body)
			}
			status, body = request(t, http.MethodGet, base+"/v1/index/db1/table1?bra=1", "")
			if status != http.StatusBadRequest || !strings.Contains(body, "las+cat+bra, las+cat") {
				t.Fatalf("unknown combination = %d %s", status, body)
			}
			del := `{"format":"canal","events":[{"data":[{"id":"10001"}],"database":"db1","table":"table1","type":"DELETE","es":1700000002000,"id":5}]}`
			if status, body := request(t, http.MethodPost, base+"/v1/index/events", del); status != http.StatusOK || !strings.Contains(body, `"applied":1`) {
				t.Fatalf("delete = %d %s", status, body)
			}
			status, body = request(t, http.MethodPost, base+"/v1/index/db1/table1/batch", `{"queries":[{"las":"72","cat":"870"},{"cat":"999","las":"72"}]}`)
			if status != http.StatusOK || !strings.Contains(body, `{"results":[{"rows":{}},{"rows":{"10002"`) {
				t.Fatalf("batch = %d %s", status, body)
			}
			status, body = request(t, http.MethodGet, base+"/v1/index/db1/table1?las=72&cat=999&count=10", "")
			if status != http.StatusOK || !strings.Contains(body, `"cursor":"0"`) || !strings.Contains(body, `"10002"`) {
				t.Fatalf("paged query = %d %s", status, body)
			}
			_, body = request(t, http.MethodGet, base+"/metrics", "")
			if !strings.Contains(body, `redstate_index_events_total{outcome="applied",table="db1.table1"} 4`) ||
				!strings.Contains(body, `redstate_index_events_total{outcome="failed",table="db1.table1"} 1`) {
				t.Errorf("metrics:\n%s", body)
			}
		})
	}
}

// TestServe_IndexCanalBatchInOnePost posts the five flat messages Canal's MQ converter makes of
// one batch (one id, one second-resolution es: INSERT A,B; UPDATE B; UPDATE A,B; UPDATE B;
// DELETE A) in order in one request: every change applies and the index ends as in-order
// delivery leaves it (A deleted, B in 504). It answered {"applied":2,"stale":5} and left both
// in 501 when the version could not order the messages of one batch.
func TestServe_IndexCanalBatchInOnePost(t *testing.T) {
	base, _, _, _ := startServe(t, "--config", writeConfig(t, indexConfig), "--redis", redistest.StartStandalone(t).URL)
	msg := func(typ string, rows ...string) string {
		return `{"data":[` + strings.Join(rows, ",") + `],"database":"db1","table":"table1","type":"` + typ + `","es":1700000000000,"id":41,"isDdl":false}`
	}
	row := func(id, cat string) string {
		return `{"id":"` + id + `","lastAddrId":"72","categoryId":"` + cat + `","brandId":"1","yn":"1"}`
	}
	batch := `{"format":"canal","events":[` + strings.Join([]string{msg("INSERT", row("1", "501"), row("2", "501")),
		msg("UPDATE", row("2", "502")), msg("UPDATE", row("1", "503"), row("2", "503")), msg("UPDATE", row("2", "504")),
		msg("DELETE", row("1", "503"))}, ",") + `]}`
	if status, body := request(t, http.MethodPost, base+"/v1/index/events", batch); status != http.StatusOK || !strings.Contains(body, `"applied":7,"stale":0`) {
		t.Fatalf("batch = %d %s; want 7 applied", status, body)
	}
	for cat, want := range map[string]string{"501": `"rows":{}`, "503": `"rows":{}`, "504": `"rows":{"2":`} {
		if status, body := request(t, http.MethodGet, base+"/v1/index/db1/table1?las=72&cat="+cat, ""); status != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("cat %s = %d %s; want %s", cat, status, body, want)
		}
	}
}

// TestServe_IndexFromRedisStreams: serve consumes a Debezium-sink stream into the index.
func TestServe_IndexFromRedisStreams(t *testing.T) {
	srv := redistest.StartStandalone(t)
	cfg := writeConfig(t, indexConfig+"  streams:\n    keys: [dbz.db1.table1]\n    claim-idle: 1s\n")
	base, logs, _, _ := startServe(t, "--config", cfg, "--redis", srv.URL)
	if !strings.Contains(logs.String(), "CDC index consuming Redis Streams") {
		t.Fatalf("no stream source:\n%s", logs)
	}
	c := srv.Client(t)
	ev := `{"before":null,"after":{"id":5,"lastAddrId":9,"categoryId":8,"brandId":null,"yn":1},"source":{"db":"db1","table":"table1","file":"mysql-bin.000002","pos":10,"row":0},"op":"c"}`
	if err := c.XAdd(t.Context(), &redis.XAddArgs{Stream: "dbz.db1.table1", Values: []string{`{"id":5}`, ev}}).Err(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, body := request(t, http.MethodGet, base+"/v1/index/db1/table1?las=9&cat=8", "")
		if strings.Contains(body, `"5"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stream entry never indexed: %s\nlogs:\n%s", body, logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
