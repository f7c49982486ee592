package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/redstate/redstate/httpapi"
	"github.com/redstate/redstate/redistest"
)

// TestServe_IndexFromKafka: serve with index.kafka consumes Canal flat messages from an
// in-process Kafka (kfake) into the index, reports the source and exposes its lag; the group
// timing of the configuration is what its JoinGroup asks the coordinator for.
func TestServe_IndexFromKafka(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "canal.db1"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	var mu sync.Mutex
	var joins []string
	cluster.ControlKey(int16(kmsg.JoinGroup), func(r kmsg.Request) (kmsg.Response, error, bool) {
		cluster.KeepControl()
		j := r.(*kmsg.JoinGroupRequest)
		mu.Lock()
		joins = append(joins, fmt.Sprintf("session %dms rebalance %dms", j.SessionTimeoutMillis, j.RebalanceTimeoutMillis))
		mu.Unlock()
		return nil, nil, false
	})
	brokers := cluster.ListenAddrs()
	srv := redistest.StartStandalone(t)
	cfg := writeConfig(t, indexConfig+fmt.Sprintf("  kafka:\n    brokers: [%s]\n    topics: [canal.db1]\n    format: canal\n"+
		"    session-timeout: 7s\n    heartbeat-interval: 700ms\n    rebalance-timeout: 23s\n    group-lag-interval: 200ms\n", brokers[0]))
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
	// The group as read after the record's commit: both partitions this instance's, the one
	// with the record committed to its end, the other empty.
	st := waitKafkaStatus(t, base, logs, "the group caught up", func(st httpapi.IndexSourceStatus) bool {
		g := st.KafkaGroup
		var end int64
		for _, p := range g.Partitions {
			caughtUp := p.EndOffset == p.CommittedOffset || p.EndOffset == 0 && p.CommittedOffset == -1 // nothing to commit on an empty partition
			if !p.Self || p.LagRecords != 0 || !caughtUp || p.ClientID != "redstate" {
				return false
			}
			end += p.EndOffset
		}
		return len(g.Partitions) == 2 && end == 1 && st.GroupLagRecords != nil && *st.GroupLagRecords == 0
	})
	if g := st.KafkaGroup; g.Group != "redstate-index" || g.State != "Stable" || g.Members != 1 || g.SessionTimeoutSeconds != 7 ||
		g.HeartbeatIntervalSeconds != 0.7 || g.RebalanceTimeoutSeconds != 23 || g.LagIntervalSeconds != 0.2 || g.ReadAt == nil || g.AgeSeconds == nil {
		t.Errorf("kafka group %+v", g)
	}
	_, metrics := request(t, http.MethodGet, base+"/metrics", "")
	for _, want := range []string{`redstate_index_kafka_group_lag_age_seconds `,
		`redstate_index_kafka_group_lag_records{partition="0",topic="canal.db1"} 0`, `redstate_index_kafka_group_lag_records{partition="1",topic="canal.db1"} 0`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s:\n%s", want, grepLines(metrics, "redstate_index_kafka"))
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(joins) == 0 || joins[0] != "session 7000ms rebalance 23000ms" {
		t.Errorf("JoinGroup requests %v, want session 7000ms rebalance 23000ms", joins)
	}
}

// TestServe_IndexKafkaStuckMemberBacklog: a second member of serve's group holds a partition
// and applies nothing (a stuck or killed instance the coordinator has not expired yet): the
// records produced to it show at once in serve's status (groupLagRecords, the partition with
// its owner) and metrics, while serve's own lagRecords stays 0; once it leaves, serve takes the
// partition over and the group's lag falls to 0.
func TestServe_IndexKafkaStuckMemberBacklog(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "canal.db1"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	brokers := cluster.ListenAddrs()
	srv := redistest.StartStandalone(t)
	cfg := writeConfig(t, indexConfig+fmt.Sprintf("  kafka:\n    brokers: [%s]\n    topics: [canal.db1]\n    format: canal\n    group-lag-interval: 100ms\n", brokers[0]))
	base, logs, _, _ := startServe(t, "--config", cfg, "--redis", srv.URL)
	waitKafkaStatus(t, base, logs, "serve owns both partitions", func(st httpapi.IndexSourceStatus) bool {
		return st.KafkaGroup != nil && len(st.KafkaGroup.Partitions) == 2 && st.KafkaGroup.Partitions[0].Self && st.KafkaGroup.Partitions[1].Self
	})
	stuck, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ClientID("stuck"), kgo.ConsumerGroup("redstate-index"),
		kgo.ConsumeTopics("canal.db1"), kgo.HeartbeatInterval(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer stuck.Close()
	var held int32 = -1
	waitKafkaStatus(t, base, logs, "the stuck member holds a partition", func(st httpapi.IndexSourceStatus) bool {
		for _, p := range st.KafkaGroup.Partitions {
			if p.ClientID == "stuck" && !p.Self {
				held = p.Partition
			}
		}
		return held >= 0 && st.KafkaGroup.Members == 2
	})
	prod, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	const n = 40
	for i := range n {
		msg := fmt.Sprintf(`{"data":[{"id":"%d","lastAddrId":"9","categoryId":"8","brandId":null,"yn":"1"}],"database":"db1","table":"table1","type":"INSERT","es":1700000000000,"id":3,"isDdl":false}`, 100+i)
		if err := prod.ProduceSync(t.Context(), &kgo.Record{Topic: "canal.db1", Partition: held, Value: []byte(msg)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	waitKafkaStatus(t, base, logs, "the stuck member's backlog", func(st httpapi.IndexSourceStatus) bool {
		p := st.KafkaGroup.Partitions[held]
		return st.GroupLagRecords != nil && *st.GroupLagRecords == n && st.LagRecords == 0 && p.LagRecords == n && p.ClientID == "stuck" && !p.Self
	})
	_, metrics := request(t, http.MethodGet, base+"/metrics", "")
	if want := fmt.Sprintf(`redstate_index_kafka_group_lag_records{partition="%d",topic="canal.db1"} %d`, held, n); !strings.Contains(metrics, want) {
		t.Errorf("metrics lack %s:\n%s", want, grepLines(metrics, "redstate_index_kafka"))
	}
	stuck.Close() // leaves the group
	waitKafkaStatus(t, base, logs, "serve took the partition over and applied it", func(st httpapi.IndexSourceStatus) bool {
		p := st.KafkaGroup.Partitions[held]
		return st.GroupLagRecords != nil && *st.GroupLagRecords == 0 && p.Self && p.CommittedOffset == n
	})
}

// kafkaSourceStatus is the kafka source of GET /v1/index/status.
func kafkaSourceStatus(t *testing.T, base string) httpapi.IndexSourceStatus {
	t.Helper()
	_, body := request(t, http.MethodGet, base+"/v1/index/status", "")
	var status struct {
		Sources []httpapi.IndexSourceStatus `json:"sources"`
	}
	if err := json.Unmarshal([]byte(body), &status); err != nil {
		t.Fatalf("index status %s: %v", body, err)
	}
	for _, s := range status.Sources {
		if s.Name == "kafka" {
			return s
		}
	}
	t.Fatalf("index status lacks the kafka source: %s", body)
	return httpapi.IndexSourceStatus{}
}

// waitKafkaStatus polls the kafka source's status until cond holds (60 s at most), and returns
// it.
func waitKafkaStatus(t *testing.T, base string, logs fmt.Stringer, what string, cond func(httpapi.IndexSourceStatus) bool) httpapi.IndexSourceStatus {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		st := kafkaSourceStatus(t, base)
		if st.KafkaGroup != nil && cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached; status %+v, group %+v\nlogs:\n%s", what, st, st.KafkaGroup, logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// grepLines keeps the lines of s containing sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
