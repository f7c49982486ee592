package queue_test

import (
	"testing"

	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/memqueue"
	"github.com/redstate/redstate/queue/queuetest"
)

// The queue's correctness properties 1 to 3 (message round trip, list round trip, a retry
// increments RetryCount; docs/queue.md) on the memory backend; the Redis backend runs the same
// queuetest helpers. Each runs rapid's default 100 checks (or -rapid.checks).

func memBroker(*testing.T) queue.Broker { return memqueue.NewBroker(memqueue.Options{}) }

// TestProperty1_MessageRoundTrip checks Property 1: 队列消息序列化/反序列化 round trip.
func TestProperty1_MessageRoundTrip(t *testing.T) { queuetest.PropertyMessageRoundTrip(t) }

// TestProperty2_ListRoundTrip checks Property 2: Redis List LPUSH/BRPOP round trip.
func TestProperty2_ListRoundTrip(t *testing.T) {
	queuetest.PropertyListRoundTrip(t, memBroker(t))
}

// TestProperty3_RetryIncrementsRetryCount checks Property 3: 失败重试递增 RetryCount.
func TestProperty3_RetryIncrementsRetryCount(t *testing.T) {
	queuetest.PropertyRetryIncrements(t, memBroker(t))
}

// TestProperty_JobsMatchModel checks job records against a model over random operation
// sequences (queuetest.PropertyJobsMatchModel).
func TestProperty_JobsMatchModel(t *testing.T) {
	queuetest.PropertyJobsMatchModel(t, memBroker(t))
}
