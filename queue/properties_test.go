package queue_test

import (
	"testing"

	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/memqueue"
	"github.com/redstate/redstate/queue/queuetest"
)

// The seed's correctness properties on the memory backend; the Redis backend runs the same
// queuetest helpers. Each runs rapid's default 100 checks (or -rapid.checks).

func memBroker(*testing.T) queue.Broker { return memqueue.NewBroker(memqueue.Options{}) }

func memRecords(*testing.T) queue.RecordStore {
	return memqueue.NewRecordStore(memqueue.RecordOptions{})
}

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

// TestProperty4_RegenerateResetsStatusAndEnqueues checks Property 4: 重新生成重置状态并入队.
func TestProperty4_RegenerateResetsStatusAndEnqueues(t *testing.T) {
	queuetest.PropertyRegenerateResets(t, memBroker(t), memRecords(t))
}

// TestProperty5_InvalidStatusRejectsRegeneration checks Property 5: 非法状态拒绝重新生成.
func TestProperty5_InvalidStatusRejectsRegeneration(t *testing.T) {
	queuetest.PropertyInvalidStatusRejected(t, memBroker(t), memRecords(t))
}

// TestProperty6_BatchRegenerateFiltersByStatus checks Property 6: 批量重新生成按状态过滤.
func TestProperty6_BatchRegenerateFiltersByStatus(t *testing.T) {
	queuetest.PropertyBatchFiltersByStatus(t, memBroker(t), memRecords(t))
}

// TestProperty7_BatchCountInvariant checks Property 7: 批量操作计数不变量.
func TestProperty7_BatchCountInvariant(t *testing.T) {
	queuetest.PropertyBatchCountInvariant(t, memBroker(t), memRecords(t))
}
