package queue_test

import (
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate/queue"
)

// TestConfig_ProgramSuppliesHandlerAndRecordStores: the queue section knows no program; the
// handler of a queue without one and the record stores are the caller's.
func TestConfig_ProgramSuppliesHandlerAndRecordStores(t *testing.T) {
	c := queue.Config{RecordStore: "disk", Queues: []queue.Spec{{Name: "a"}, {Name: "b", Handler: "report"}},
		Reconciler: queue.ReconcilerConfig{Age: time.Minute, Interval: time.Minute}}
	err := c.Validate("cron", "sql", "memory")
	for _, want := range []string{`queue.record-store: must be sql or memory, got "disk"`,
		`queue.queues[1].handler: "report" is not one of cron, webhook, external`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q missing from %v", want, err)
		}
	}
	if err != nil && strings.Contains(err.Error(), "queue.queues[0]") {
		t.Errorf("a queue without a handler is the program's: %v", err)
	}
	c.RecordStore, c.Queues[1].Handler = "memory", ""
	if err := c.Validate("cron", "sql", "memory"); err != nil {
		t.Fatal(err)
	}
	eff := c.EffectiveQueues("cron")
	if eff[0].Handler != "cron" || eff[1].Handler != "cron" || c.Queues[0].Handler != "" || *eff[0].Prefetch != queue.DefaultConcurrency {
		t.Errorf("effective = %+v", eff)
	}
}
