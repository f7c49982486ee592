package kafkasource_test

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/redstate/redstate/index/kafkasource"
)

// committed returns group's committed offsets (OffsetFetch).
func committed(t *testing.T, cl *kgo.Client, group string) map[kafkasource.TopicPartition]int64 {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Logf("offset fetch: %v", err)
		return nil
	}
	out := map[kafkasource.TopicPartition]int64{}
	for _, tp := range resp.Topics {
		for _, p := range tp.Partitions {
			if p.Offset >= 0 {
				out[kafkasource.TopicPartition{Topic: tp.Topic, Partition: p.Partition}] = p.Offset
			}
		}
	}
	return out
}
