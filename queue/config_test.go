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

// TestConfig_PeriodicRetention: 0 (the default) or at least MinPeriodicRetention, since a tick's
// job id is remembered only that long.
func TestConfig_PeriodicRetention(t *testing.T) {
	c := queue.Config{RecordStore: "memory", Queues: []queue.Spec{{Name: "a"}},
		Reconciler: queue.ReconcilerConfig{Age: time.Minute, Interval: time.Minute}}
	for _, tc := range []struct {
		retention time.Duration
		ok        bool
	}{{0, true}, {time.Minute, true}, {72 * time.Hour, true}, {30 * time.Second, false}, {-time.Hour, false}} {
		c.PeriodicRetention = tc.retention
		err := c.Validate("cron", "memory")
		if ok := err == nil; ok != tc.ok || !ok && !strings.Contains(err.Error(), "queue.periodic-retention: ") {
			t.Errorf("periodic-retention %s: %v, want ok %v", tc.retention, err, tc.ok)
		}
	}
}
