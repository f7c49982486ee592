package report_test

import (
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/report"
)

func TestConfig_DefaultsAreValid(t *testing.T) {
	q, r := report.DefaultQueueConfig(), report.DefaultConfig()
	if err := report.ValidateQueueConfig(q); err != nil {
		t.Fatal(err)
	}
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(q.Queues) != 1 || q.Queues[0].Name != report.DefaultQueue || q.Queues[0].Handler != report.HandlerReport ||
		q.RecordStore != report.RecordStoreSQL || !q.Reconciler.Enabled || q.Reconciler.Age != report.DefaultReconcileAge ||
		q.Reconciler.Interval != report.DefaultReconcileInterval || r.Delay != report.DefaultDelay {
		t.Errorf("defaults = %+v %+v", q, r)
	}
	if name, on := r.QueueIn(q); name != report.DefaultQueue || !on {
		t.Errorf("QueueIn = %q, %v", name, on)
	}
}

func TestConfig_ValidateReportsEveryProblem(t *testing.T) {
	q := report.DefaultQueueConfig()
	q.RecordStore, q.RecordRetention = "disk", -time.Second
	q.Reconciler.Age, q.Reconciler.Interval = 0, -time.Second
	q.Queues = append(q.Queues,
		queue.Spec{Name: "jobs"}, queue.Spec{Name: "jobs", Handler: "cron"}, queue.Spec{Name: "mail", Webhook: queue.WebhookSpec{URL: "http://h/j"}})
	err := report.ValidateQueueConfig(q)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"queue.record-store:", "queue.record-retention:", "queue.reconciler.age:", "queue.reconciler.interval:",
		`queue.queues[2].name: "jobs" is also the name of queue.queues[1]`, `queue.queues[2].handler: "cron" is not one of report, webhook, external`,
		`queue.queues[3].webhook.url: is set but handler is "report"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q missing from %v", want, err)
		}
	}
	if err := (report.Config{Delay: -time.Second}).Validate(); err == nil || !strings.HasPrefix(err.Error(), "report.delay:") {
		t.Errorf("negative delay: %v", err)
	}
}

func TestConfig_QueueIn(t *testing.T) {
	webhook := queue.Spec{Name: "jobs", Handler: queue.HandlerWebhook, Webhook: queue.WebhookSpec{URL: "http://127.0.0.1:9/j"}}
	for _, c := range []struct {
		queues []queue.Spec
		queue  string
		want   string
		on     bool
	}{
		{[]queue.Spec{webhook, {Name: "reports"}, {Name: report.DefaultQueue, Handler: queue.HandlerExternal}}, "", report.DefaultQueue, true},
		{[]queue.Spec{webhook, {Name: "reports"}}, "", "reports", true},
		{[]queue.Spec{webhook}, "", "", false},
		{[]queue.Spec{webhook}, "jobs", "jobs", true},
		{[]queue.Spec{webhook}, "missing", "missing", false},
	} {
		name, on := report.Config{Queue: c.queue}.QueueIn(queue.Config{Queues: c.queues})
		if name != c.want || on != c.on {
			t.Errorf("queue %q in %v: %q, %v; want %q, %v", c.queue, c.queues, name, on, c.want, c.on)
		}
	}
}

func TestConfig_EffectiveQueues(t *testing.T) {
	q := queue.Config{Queues: []queue.Spec{{Name: "a"}, {Name: "b", Handler: queue.HandlerExternal, Concurrency: 3}}}
	eff := q.EffectiveQueues(report.HandlerReport)
	if eff[0].Handler != report.HandlerReport || eff[0].Retries() != queue.DefaultMaxRetries || *eff[0].Prefetch != 1 ||
		eff[1].Handler != queue.HandlerExternal || *eff[1].Prefetch != 3 || q.Queues[0].Handler != "" {
		t.Errorf("effective = %+v", eff)
	}
}

func TestRecordsSQLConfig_Validate(t *testing.T) {
	c := report.DefaultConfig()
	if !c.SQL.IsDefault() || c.Validate() != nil {
		t.Fatalf("default report.sql: %v", c.Validate())
	}
	c.SQL.Records.Error = "" // optional
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	c.SQL.Records.Table, c.SQL.Records.Updated, c.SQL.Records.Result, c.SQL.TimeZone = "", "", "x y", "Nowhere/Else"
	err := c.Validate()
	for _, key := range []string{"report.sql.records.table", "report.sql.records.updated", "report.sql.records.result", "report.sql.time-zone"} {
		if err == nil || !strings.Contains(err.Error(), key+":") {
			t.Errorf("%s missing from %v", key, err)
		}
	}
}

// TestConfig_HandlerReportOnTheReportQueueOnly: handler report, named or by default, is valid
// on the report queue only; webhook and external queues beside it are plain queues.
func TestConfig_HandlerReportOnTheReportQueueOnly(t *testing.T) {
	webhook := queue.Spec{Name: "mail:queue", Handler: queue.HandlerWebhook, Webhook: queue.WebhookSpec{URL: "http://127.0.0.1:9000/jobs"}}
	ok := []queue.Config{
		report.DefaultQueueConfig(),
		{Queues: []queue.Spec{report.DefaultQueueSpec(), webhook, {Name: "legacy", Handler: queue.HandlerExternal}}},
		{Queues: []queue.Spec{webhook, {Name: "reports"}}}, // the first queue with handler report is the report queue
	}
	for _, q := range ok {
		if err := report.DefaultConfig().ValidateQueueHandlers(q); err != nil {
			t.Errorf("%+v: %v", q.Queues, err)
		}
	}
	q := queue.Config{Queues: []queue.Spec{report.DefaultQueueSpec(), {Name: "other"}, webhook, {Name: "v2", Handler: report.HandlerReport}}}
	err := report.DefaultConfig().ValidateQueueHandlers(q)
	for _, want := range []string{
		`queue.queues[1].handler: "report" (the default of a queue that names none) runs the report generator, which serves only the report queue "report:queue" (report.queue); give "other" handler webhook or external`,
		`queue.queues[3].handler: "report" runs the report generator`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "queues[2]") {
		t.Errorf("the webhook queue was refused: %v", err)
	}
	r := report.DefaultConfig()
	r.Queue = "mail:queue" // the report flow on a webhook queue: no queue may have handler report
	if err := r.ValidateQueueHandlers(queue.Config{Queues: []queue.Spec{webhook, {Name: "x", Handler: report.HandlerReport}}}); err == nil ||
		!strings.Contains(err.Error(), `queue.queues[1].handler: "report" runs the report generator, which serves only the report queue "mail:queue"`) {
		t.Errorf("handler report beside a webhook report queue: %v", err)
	}
}
