package cli

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redstate/redstate/redistest"
)

// TestServe_IndexFromKafka: serve with index.kafka consumes Canal flat messages from an
// in-process Kafka (kfake) into the index, reports the source and exposes its lag.
func TestServe_IndexFromKafka(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "canal.db1"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	brokers := cluster.ListenAddrs()
	srv := redistest.StartStandalone(t)
	cfg := writeConfig(t, indexConfig+fmt.Sprintf("  kafka:\n    brokers: [%s]\n    topics: [canal.db1]\n    format: canal\n", brokers[0]))
	base, logs, _, _ := startServe(t, "--config", cfg, "--redis", srv.URL)
	prod, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("canal.db1"))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	msg := `{"data":[{"id":"7","lastAddrId":"9","categoryId":"8","brandId":null,"yn":"1"}],"database":"db1","table":"table1","type":"INSERT","es":1700000000000,"id":3,"isDdl":false}`
	if err := prod.ProduceSync(t.Context(), &kgo.Record{Key: []byte("7"), Value: []byte(msg)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, body := request(t, http.MethodGet, base+"/v1/index/db1/table1?las=9&cat=8", "")
		_, metrics := request(t, http.MethodGet, base+"/metrics", "")
		if strings.Contains(body, `"7"`) && strings.Contains(metrics, "redstate_index_kafka_events_total 1") &&
			strings.Contains(metrics, `redstate_index_kafka_lag{partition=`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Kafka record never indexed: %s\nlogs:\n%s", body, logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	_, status := request(t, http.MethodGet, base+"/v1/index/status", "")
	if !strings.Contains(status, `"name":"kafka"`) {
		t.Errorf("index status lacks the kafka source: %s", status)
	}
}
