package kafkasource_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/redstate/redstate/index"
)

// TestSource_RealBroker runs the Canal scenario against the brokers in REDSTATE_KAFKA_BROKERS
// (comma separated) on a topic of its own, deleted at the end.
func TestSource_RealBroker(t *testing.T) {
	brokers := os.Getenv("REDSTATE_KAFKA_BROKERS")
	if brokers == "" {
		t.Skip("REDSTATE_KAFKA_BROKERS is not set: no real Kafka broker to test against (the kfake tests cover the source)")
	}
	e := newEnvOn(t, strings.Split(brokers, ","))
	topic := "redstate-test-" + e.prefix
	adm := e.admin()
	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = topic, 3, -1
	create.Topics = append(create.Topics, ct)
	resp, err := create.RequestWith(context.Background(), adm)
	if err == nil {
		err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
	t.Cleanup(func() {
		del := kmsg.NewPtrDeleteTopicsRequest()
		dt := kmsg.NewDeleteTopicsRequestTopic()
		dt.Topic = &topic
		del.Topics, del.TopicNames = append(del.Topics, dt), []string{topic}
		_, _ = del.RequestWith(context.Background(), adm)
	})
	tr := canalScenario(e, topic, 3)
	run(t, e.source(topic, index.FormatCanal, []string{topic}))
	e.waitTruth(tr)
	e.waitCommitted(topic)
}
