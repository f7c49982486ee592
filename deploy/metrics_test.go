package deploy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redstate/redstate/cli"
	"github.com/redstate/redstate/redistest"
	"github.com/redstate/redstate/sqldb"
	"github.com/redstate/redstate/sqldb/sqltest"
)

// generatedByPrometheus are series Prometheus makes itself for every target; the kit may name
// them although no server exports them.
var generatedByPrometheus = []string{"up"}

// kitServer is a redstate serve running in this process with every block and every index
// source on: Redis (client-side cache on, build status with the fallback policy), the report
// queue, the executor with a webhook stage handler, the CDC index fed over HTTP, from Kafka
// (kfake), from PostgreSQL and from the MariaDB binary log, and the feed.
type kitServer struct {
	base   string
	redis  *redistest.Server
	kafka  []string
	logs   *lockedBuffer
	client *http.Client
}

// indexTable declares an items table of the CDC index in database db.
func indexTable(db string) string {
	return fmt.Sprintf(`    - db: %s
      table: items
      key: id
      delete-column: yn
      columns:
        - {name: id, type: long}
        - {name: las, type: int}
        - {name: cat, type: int}
        - {name: yn, type: int}
      dimensions:
        - [{code: las, column: las}, {code: cat, column: cat}]
`, db)
}

// startKitServer starts the server of kitServer and the sources it follows.
func startKitServer(t *testing.T) *kitServer {
	t.Helper()
	rds := redistest.StartStandalone(t)
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "canal.kit"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)

	pgDSN := sqltest.PostgresDSN(t)
	pg := openDB(t, pgDSN)
	slot := fmt.Sprintf("deploy_kit_%d", time.Now().UnixNano()%1e9)
	t.Cleanup(func() {
		_, _ = pg.ExecContext(context.Background(), "SELECT pg_drop_replication_slot($1) FROM pg_replication_slots WHERE slot_name = $1 AND NOT active", slot)
	})
	mariaDSN := sqltest.MariaDBDSN(t)
	maria := openDB(t, mariaDSN)
	var mariaDB string
	if err := maria.QueryRow("SELECT DATABASE()").Scan(&mariaDB); err != nil {
		t.Fatal(err)
	}
	for _, db := range []*sqldb.DB{pg, maria} {
		for _, q := range []string{
			"CREATE TABLE items (id bigint PRIMARY KEY, las int NOT NULL, cat int NOT NULL, yn int NOT NULL DEFAULT 1)",
			"INSERT INTO items (id, las, cat) VALUES (1, 1, 1), (2, 1, 2)",
		} {
			if _, err := db.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
	}

	stages := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, "{}")
	}))
	t.Cleanup(stages.Close)

	cfg := fmt.Sprintf(`server:
  addr: 127.0.0.1:0
  shutdown-timeout: 5s
redis:
  url: %s
  client-cache:
    enabled: true
log:
  format: json
publish:
  build-status:
    resilience:
      policy: fallback
      wait-duration-in-open-state: 1s
      sliding-window-size: 2
      write-back-interval: 100ms
report:
  delay: 10ms
executor:
  metrics-interval: 1s
  handlers:
    - {name: steps, url: %q, secret: 0123456789abcdef0123456789abcdef}
index:
  tables:
%s%s%s  postgres:
    url: %q
    slot: %s
    database: shop
    tables: [items]
  mysql:
    url: %q
    tables: [%s.items]
  kafka:
    brokers: [%s]
    topics: [canal.kit]
    format: canal
    group-lag-interval: 200ms
`, rds.URL, stages.URL, indexTable("kitdb"), indexTable("shop"), indexTable(mariaDB), pgDSN, slot,
		strings.TrimSuffix(mariaDSN, mariaDB), mariaDB, cluster.ListenAddrs()[0])
	path := filepath.Join(t.TempDir(), "redstate.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}

	logs := &lockedBuffer{}
	root := cli.NewRootCommand()
	root.SetArgs([]string{"serve", "--config", path, "--data-dir", t.TempDir()})
	root.SetOut(io.Discard)
	root.SetErr(logs)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("serve still running 30s after it was stopped")
		}
	})
	wait, stop := context.WithTimeout(ctx, 60*time.Second)
	defer stop()
	if !logs.waitFor(wait, `"msg":"listening on `) {
		t.Fatalf("serve did not listen:\n%s", logs)
	}
	addr := regexp.MustCompile(`"msg":"listening on ([^"]+)"`).FindStringSubmatch(logs.String())[1]
	return &kitServer{base: "http://" + addr, redis: rds, kafka: cluster.ListenAddrs(), logs: logs,
		client: &http.Client{Timeout: 10 * time.Second}}
}

func openDB(t *testing.T, dsn string) *sqldb.DB {
	t.Helper()
	db, err := sqldb.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// call sends one request and fails the test unless it answers want (0: any 2xx).
func (s *kitServer) call(t *testing.T, method, path, body string, want int, header ...string) string {
	t.Helper()
	req, err := http.NewRequest(method, s.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := s.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != want && (want != 0 || res.StatusCode/100 != 2) {
		t.Fatalf("%s %s = %d %s, want %d\nlogs:\n%s", method, path, res.StatusCode, b, want, s.logs)
	}
	return string(b)
}

// openStream opens an event stream and reads its first event; it stays open until the test ends.
func (s *kitServer) openStream(t *testing.T, path string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = res.Body.Close() })
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %d", path, res.StatusCode)
	}
	line, err := bufio.NewReader(res.Body).ReadString('\n')
	if err != nil || line == "" {
		t.Fatalf("stream %s: %q %v", path, line, err)
	}
}

// exported scrapes /metrics and returns the series names it holds (a histogram's _bucket, _sum
// and _count) with their label sets.
func (s *kitServer) exported(t *testing.T) map[string][]string {
	t.Helper()
	res, err := s.client.Get(s.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(res.Body)
	if err != nil {
		t.Fatalf("/metrics: %v", err)
	}
	out := map[string][]string{}
	for name, f := range families {
		var labels []string
		for _, m := range f.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			labels = append(labels, strings.Join(ls, ","))
		}
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM:
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				out[name+suffix] = labels
			}
		case dto.MetricType_SUMMARY:
			out[name] = labels
			out[name+"_sum"], out[name+"_count"] = labels, labels
		default:
			out[name] = labels
		}
	}
	return out
}

// waitForSeries scrapes until every name is exported (as new series appear while the blocks
// work: a histogram after its first observation, the Kafka group's lag after its first read),
// and fails naming the missing ones after a minute.
func (s *kitServer) waitForSeries(t *testing.T, names []string) map[string][]string {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		got := s.exported(t)
		var missing []string
		for _, n := range names {
			if _, ok := got[n]; !ok {
				missing = append(missing, n)
			}
		}
		if len(missing) == 0 {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server does not export %v (named by the monitoring kit) after exercising every block\nlogs:\n%s", missing, s.logs)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// kitMetricNames returns the metric names the kit's rules and dashboard select that a
// server must export: recording rules' own names and Prometheus's series left out.
func kitMetricNames(t *testing.T) (names []string, where map[string][]string) {
	t.Helper()
	recorded := map[string]bool{}
	for _, r := range kitRules(t) {
		if r.Record != "" {
			recorded[r.Record] = true
		}
	}
	where = map[string][]string{}
	for _, e := range kitExpressions(t) {
		ns, err := metricNames(e.Expr)
		if err != nil {
			t.Fatalf("%s: %q: %v", e.Where, e.Expr, err)
		}
		for _, n := range ns {
			switch {
			case recorded[n]:
				continue
			case strings.Contains(n, ":"):
				t.Errorf("%s uses %s, which no recording rule defines", e.Where, n)
				continue
			case slices.Contains(generatedByPrometheus, n):
				continue
			}
			if where[n] == nil {
				names = append(names, n)
			}
			where[n] = append(where[n], e.Where)
		}
	}
	sort.Strings(names)
	return names, where
}

// TestMetrics_KitNamesOnlyExportedMetrics runs a server with every block and every index
// source, exercises each block (builds saved, read and refused, a live build stream, a report
// submitted and generated, an executor plan run through a webhook handler, index events over
// HTTP and from Kafka, PostgreSQL and MariaDB, a feed post fanned out and read with a live
// stream, a Redis outage during which a build write waits in the fallback and is written back),
// scrapes /metrics and fails if a rule or the dashboard names a metric the server does not
// export, or if docs/deploy.md does not list an exported redstate_ metric.
func TestMetrics_KitNamesOnlyExportedMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a server with Redis, Kafka, PostgreSQL and MariaDB")
	}
	names, where := kitMetricNames(t)
	if len(names) < 30 {
		t.Fatalf("the kit names only %d metrics: %v", len(names), names)
	}
	s := startKitServer(t)

	// Build status: save, read, a refused conditional write (an error by code), a live stream.
	const id = "550e8400-e29b-41d4-a716-446655440000"
	doc := `{"projectId":"p","platforms":["android"],"status":"IN_PROGRESS","platformResults":{},"createdAt":"2025-11-09T10:30:00","updatedAt":"2025-11-09T10:30:00"}`
	s.call(t, http.MethodPut, "/v1/builds/"+id, doc, http.StatusOK)
	s.call(t, http.MethodGet, "/v1/builds/"+id, "", http.StatusOK)
	s.call(t, http.MethodGet, "/v1/builds/"+id, "", http.StatusOK) // a client-side cache hit
	s.call(t, http.MethodPut, "/v1/builds/"+id, doc, http.StatusPreconditionFailed, "If-None-Match", "*")
	s.openStream(t, "/v1/builds/"+id+"/events")

	// Queue and report flow.
	s.call(t, http.MethodPost, "/api/assessment/submit", `{"recordId": 12345, "answers": {"a": [1, 2]}}`, http.StatusAccepted)

	// Executor: a plan whose stages call the webhook handler.
	s.call(t, http.MethodPost, "/v1/executor/plans", `{"planId":"p1","maxConcurrency":1,"tasks":[{"taskId":"t1","tenantId":"acme","handler":"steps","stages":["s0","s1"],"contextData":{}}]}`, http.StatusCreated)

	// Index: events over HTTP and a record on Kafka; PostgreSQL and MariaDB rows were there
	// before the start (backfill, snapshot) and change now (streams).
	canal := `{"data":[{"id":"%d","las":"1","cat":"2","yn":"1"}],"database":"kitdb","table":"items","type":"INSERT","es":1700000000000,"id":%d,"isDdl":false}`
	s.call(t, http.MethodPost, "/v1/index/events", `{"format":"canal","events":[`+fmt.Sprintf(canal, 1, 1)+`]}`, http.StatusOK)
	prod, err := kgo.NewClient(kgo.SeedBrokers(s.kafka...), kgo.DefaultProduceTopic("canal.kit"))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	if err := prod.ProduceSync(context.Background(), &kgo.Record{Key: []byte("2"), Value: []byte(fmt.Sprintf(canal, 2, 2))}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// Feed: follow, publish (fan-out job), read, a live stream of counts.
	s.call(t, http.MethodPut, "/v1/feed/users/2001/following/1001", "", 0)
	s.call(t, http.MethodPost, "/v1/feed/posts", `{"userId":1001,"title":"hello"}`, http.StatusCreated)
	s.call(t, http.MethodGet, "/v1/feed/users/2001/unread-counts", "", http.StatusOK)
	s.openStream(t, "/v1/feed/users/2001/events")

	writeBack := "redstate_fallback_writeback_total"
	var before []string
	for _, n := range names {
		if n != writeBack {
			before = append(before, n)
		}
	}
	got := s.waitForSeries(t, before)
	if streams := got["redstate_http_event_streams"]; len(streams) != 1 {
		t.Errorf("event streams gauge: %v", streams)
	}

	// A Redis outage: the build write waits in the fallback and is written back on return.
	s.redis.Kill(t)
	s.call(t, http.MethodPut, "/v1/builds/"+id, doc, http.StatusOK)
	s.redis.Restart(t)
	got = s.waitForSeries(t, names)
	t.Logf("the kit names %d metrics, all exported; the server exports %d series names", len(names), len(got))

	checkDocumented(t, got, where)
}

// checkDocumented fails for every exported redstate_ metric docs/deploy.md does not list.
func checkDocumented(t *testing.T, exported map[string][]string, where map[string][]string) {
	t.Helper()
	docs := string(readFile(t, "docs/deploy.md"))
	for name := range exported {
		if !strings.HasPrefix(name, "redstate_") {
			continue
		}
		base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")
		if !strings.Contains(docs, "`"+base+"`") && !strings.Contains(docs, "`"+name+"`") {
			t.Errorf("docs/deploy.md does not list %s (used by %v)", base, where[name])
		}
	}
}
