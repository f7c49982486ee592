package queue_test

import (
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate/queue"
)

// TestConfig_PeriodicEntriesValidated: every problem of queue.periodic is reported under its
// key (bad or duplicate name, cron that does not parse, unknown zone or two zones, queue not
// configured, payload not JSON, a name too long for its ticks' job ids); good entries pass, the
// payload becomes JSON.
func TestConfig_PeriodicEntriesValidated(t *testing.T) {
	c := queue.Config{RecordStore: "memory", Queues: []queue.Spec{{Name: "mail:queue"}},
		Reconciler: queue.ReconcilerConfig{Age: time.Minute, Interval: time.Minute},
		Periodic: []queue.PeriodicSpec{
			{Name: "nightly", Cron: "0 3 * * *", Queue: "mail:queue", Timezone: "Europe/Paris", Payload: map[string]any{"kind": "digest"}},
			{Name: "nightly", Cron: "61 * * * *", Queue: "other"},
			{Name: "bad name", Cron: "@every 5m", Queue: "mail:queue", Timezone: "Mars/Olympus"},
			{Name: "zones", Cron: "CRON_TZ=UTC * * * * *", Queue: "mail:queue", Timezone: "UTC", Payload: func() {}},
			{Name: strings.Repeat("n", queue.MaxPeriodicNameLen+1), Cron: "@hourly", Queue: "mail:queue"},
			{Name: strings.Repeat("n", queue.MaxPeriodicNameLen), Cron: "@hourly", Queue: "mail:queue"},
		}}
	err := c.Validate("report", "memory")
	for _, want := range []string{
		`queue.periodic[1].name: "nightly" is also the name of queue.periodic[0]`,
		`queue.periodic[1].cron:`,
		`queue.periodic[1].queue: "other" is not one of queue.queues`,
		`queue.periodic[2].name:`,
		`queue.periodic[2].cron:`,
		`queue.periodic[3].cron:`,
		`queue.periodic[3].payload:`,
		`queue.periodic[4].name: 111 characters; at most 110`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q missing from %v", want, err)
		}
	}
	if err != nil && (strings.Contains(err.Error(), "queue.periodic[0].") || strings.Contains(err.Error(), "queue.periodic[5].")) {
		t.Errorf("a good entry is refused: %v", err)
	}
	c.Periodic = c.Periodic[:1]
	if err := c.Validate("report", "memory"); err != nil {
		t.Fatal(err)
	}
	if p, err := c.Periodic[0].PayloadJSON(); err != nil || string(p) != `{"kind":"digest"}` {
		t.Fatalf("payload = %s, %v", p, err)
	}
}
