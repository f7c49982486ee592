package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redstate/redstate/httpapi"
	"github.com/redstate/redstate/redistest"
)

// TestDashboard_IndexShowsKafkaGroupBacklog: serve consumes a two-partition topic while another
// member of its group (a stuck instance) holds one partition and applies nothing; the records
// produced there show on serve's Index page at once: the group's total, a warning naming the
// partitions this instance does not own, the owner of each partition and the takeover time.
func TestDashboard_IndexShowsKafkaGroupBacklog(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes and a browser: not under -short")
	}
	browser := chromiumPath(t)
	rds := redistest.StartStandalone(t)
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "canal.shop"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	brokers := cluster.ListenAddrs()
	cfg := filepath.Join(t.TempDir(), "redstate.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, `
index:
  tables:
    - db: shop
      table: orders
      key: id
      columns:
        - {name: id, type: long}
        - {name: region, type: int}
      dimensions:
        - [{code: reg, column: region}]
  kafka:
    brokers: [%s]
    topics: [canal.shop]
    format: canal
    group-lag-interval: 200ms
`, brokers[0]), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, "--config", cfg, "--redis", rds.URL)
	kafkaStatus := func() httpapi.IndexSourceStatus {
		t.Helper()
		code, body, _ := s.do(t, http.MethodGet, "/v1/index/status", "")
		var st struct {
			Sources []httpapi.IndexSourceStatus `json:"sources"`
		}
		if err := json.Unmarshal(body, &st); code != http.StatusOK || err != nil {
			t.Fatalf("index status %d %s: %v", code, body, err)
		}
		for _, src := range st.Sources {
			if src.Name == "kafka" && src.KafkaGroup != nil {
				return src
			}
		}
		return httpapi.IndexSourceStatus{}
	}
	eventuallyLogs(t, 60*time.Second, "serve owns both partitions", s, func() bool {
		g := kafkaStatus().KafkaGroup
		return g != nil && len(g.Partitions) == 2 && g.Partitions[0].Self && g.Partitions[1].Self
	})
	stuck, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ClientID("stuck"), kgo.ConsumerGroup("redstate-index"), kgo.ConsumeTopics("canal.shop"))
	if err != nil {
		t.Fatal(err)
	}
	defer stuck.Close()
	held := int32(-1)
	eventuallyLogs(t, 60*time.Second, "the stuck member holds a partition", s, func() bool {
		g := kafkaStatus().KafkaGroup
		for _, p := range g.Partitions {
			if p.ClientID == "stuck" {
				held = p.Partition
			}
		}
		return held >= 0
	})
	prod, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for i := range 25 {
		rec := &kgo.Record{Topic: "canal.shop", Partition: held, Value: fmt.Appendf(nil,
			`{"data":[{"id":"%d","region":"7"}],"database":"shop","table":"orders","type":"INSERT","es":1700000000000,"id":1}`, i+1)}
		if err := prod.ProduceSync(context.Background(), rec).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	eventuallyLogs(t, 60*time.Second, "the backlog in the status", s, func() bool {
		st := kafkaStatus()
		return st.GroupLagRecords != nil && *st.GroupLagRecords == 25
	})

	ctx, cancel := startBrowser(t, browser, 2*time.Minute, func(format string, args ...any) {
		if msg := fmt.Sprintf(format, args...); !strings.Contains(msg, "unhandled") {
			t.Logf("chromedp: %s", msg)
		}
	}, chromedp.WindowSize(420, 900))
	defer cancel()
	run := func(what string, actions ...chromedp.Action) {
		t.Helper()
		sctx, scancel := context.WithTimeout(ctx, 30*time.Second)
		defer scancel()
		if err := chromedp.Run(sctx, actions...); err != nil {
			t.Fatalf("%s: %v\nserver logs:\n%s", what, err, s.Logs())
		}
	}
	var view string
	var warned []string
	run("index page", chromedp.Navigate(s.Base+"/ui/#/index"), chromedp.WaitVisible(`//h2[starts-with(text(),'Kafka consumer group')]`, chromedp.BySearch),
		chromedp.Text("#view", &view, chromedp.ByQuery),
		chromedp.Evaluate(`[...document.querySelectorAll('#view td span.warn')].map(e => e.textContent)`, &warned))
	for _, want := range []string{
		"Kafka consumer group redstate-index", "2 members; 25 records waiting over the group",
		"25 records wait on 1 partition this instance does not own",
		"A killed instance's partitions move to the others after about 11 s (session timeout 10 s + heartbeat 1 s), at most 40 s",
		"0 here, 25 in the group", "this instance", "stuck on ",
	} {
		if !strings.Contains(view, want) {
			t.Errorf("index page lacks %q:\n%s", want, view)
		}
	}
	if len(warned) != 1 || warned[0] != "25" {
		t.Errorf("marked lag cells %v, want the stuck member's 25", warned)
	}
	var overflow int
	var png []byte
	run("screenshot", chromedp.Evaluate(`document.documentElement.scrollWidth - window.innerWidth`, &overflow), chromedp.FullScreenshot(&png, 100))
	if overflow > 0 {
		t.Errorf("the index page is %d px wider than the phone-sized window", overflow)
	}
	path := filepath.Join(artifactDir(t), "dashboard-index-kafka.png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}
