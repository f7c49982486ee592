package indexbench

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/bench"
	"github.com/redstate/redstate/bench/benchtest"
	"github.com/redstate/redstate/redistest"
)

// TestRunKafka_SmokeAgainstRealRedis: a tiny Kafka run on a standalone server and on a
// Cluster applies every record with both implementations, measures both and leaves no key.
func TestRunKafka_SmokeAgainstRealRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("needs redis-server")
	}
	for _, topo := range []string{"standalone", "cluster"} {
		t.Run(topo, func(t *testing.T) {
			var client redis.UniversalClient
			if topo == "cluster" {
				client = redistest.StartCluster(t, 3).Client(t)
			} else {
				client = redistest.StartStandalone(t).Client(t)
			}
			m := benchtest.Check(t, client, 1, func(ctx context.Context, target bench.Target) (*KafkaMeasurement, error) {
				return RunKafka(ctx, KafkaOptions{Target: target, Events: 500, Partitions: 3, RowsPerMessage: 4, Probes: 3})
			})
			if m.Events != 500 || m.Ours <= 0 || m.Baseline <= 0 || m.SteadyOurs <= 0 || m.SteadyBaseline <= 0 || len(m.Latency) != 3 || len(m.BaselineLatency) != 3 {
				t.Fatalf("measurement %+v", m)
			}
			var out strings.Builder
			if err := m.Print(&out); err != nil || !strings.Contains(out.String(), "RESULT index.kafka ours=") {
				t.Fatalf("print: %v\n%s", err, out.String())
			}
		})
	}
}

// TestCanalStream_Shape: every row inserted, half moved, a tenth deleted, each row's changes
// in one partition, no message over the row limit.
func TestCanalStream_Shape(t *testing.T) {
	recs := canalStream(1600, 3, 7)
	rows := 0
	for _, r := range recs {
		if r.rows < 1 || r.rows > 7 || r.partition < 0 || r.partition > 2 {
			t.Fatalf("record %+v", r)
		}
		rows += r.rows
		var m flatMessage
		if err := json.Unmarshal(r.value, &m); err != nil || len(m.Data) != r.rows {
			t.Fatalf("record %s: %v", r.value, err)
		}
		for _, row := range m.Data {
			if id, _ := strconv.Atoi(row["id"]); int32(id%3) != r.partition {
				t.Fatalf("row %s in partition %d", row["id"], r.partition)
			}
		}
	}
	if rows != 1000+500+100 {
		t.Fatalf("%d row changes, want 1600", rows)
	}
}
