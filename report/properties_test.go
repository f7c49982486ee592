package report_test

import (
	"testing"

	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/memqueue"
	"github.com/redstate/redstate/report"
	"github.com/redstate/redstate/report/memrecords"
	"github.com/redstate/redstate/report/reporttest"
)

// The correctness properties of the report flow (docs/report.md) on the memory backends; the Redis
// and SQL stores run the same reporttest helpers. Each runs rapid's default 100 checks (or
// -rapid.checks). Properties 2 and 3 are the queue's (queue/properties_test.go).

func memBroker(*testing.T) queue.Broker { return memqueue.NewBroker(memqueue.Options{}) }

func memRecords(*testing.T) report.RecordStore { return memrecords.New(memrecords.Options{}) }

// TestProperty1_JobRoundTrip checks Property 1 (队列消息序列化/反序列化 round trip) for report jobs.
func TestProperty1_JobRoundTrip(t *testing.T) { reporttest.PropertyJobRoundTrip(t) }

// TestProperty4_RegenerateResetsStatusAndEnqueues checks Property 4: 重新生成重置状态并入队.
func TestProperty4_RegenerateResetsStatusAndEnqueues(t *testing.T) {
	reporttest.PropertyRegenerateResets(t, memBroker(t), memRecords(t))
}

// TestProperty5_InvalidStatusRejectsRegeneration checks Property 5: 非法状态拒绝重新生成.
func TestProperty5_InvalidStatusRejectsRegeneration(t *testing.T) {
	reporttest.PropertyInvalidStatusRejected(t, memBroker(t), memRecords(t))
}

// TestProperty6_BatchRegenerateFiltersByStatus checks Property 6: 批量重新生成按状态过滤.
func TestProperty6_BatchRegenerateFiltersByStatus(t *testing.T) {
	reporttest.PropertyBatchFiltersByStatus(t, memBroker(t), memRecords(t))
}

// TestProperty7_BatchCountInvariant checks Property 7: 批量操作计数不变量.
func TestProperty7_BatchCountInvariant(t *testing.T) {
	reporttest.PropertyBatchCountInvariant(t, memBroker(t), memRecords(t))
}

// TestWorkerSuite runs the report queue's worker tests on the memory backends.
func TestWorkerSuite(t *testing.T) { reporttest.RunWorkerSuite(t, memBroker, memRecords) }
