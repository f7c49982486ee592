package config

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/report"
)

func TestQueue_Defaults(t *testing.T) {
	d := Default()
	if len(d.Queue.Queues) != 1 {
		t.Fatalf("queues = %+v", d.Queue.Queues)
	}
	q := d.Queue.Queues[0]
	if q.Name != "report:queue" || q.Concurrency != 1 || q.BlockTimeout != 30*time.Second || q.ErrorDelay != 5*time.Second ||
		!reflect.DeepEqual(q.RetryDelays, []time.Duration{10 * time.Second, 30 * time.Second, 60 * time.Second}) ||
		q.Retries() != 3 || q.Lease != 30*time.Second || q.Handler != report.HandlerReport {
		t.Errorf("default queue = %+v", q)
	}
	if !d.Queue.Reconciler.Enabled || d.Queue.Reconciler.Age != 10*time.Minute || d.Report.Delay != 2*time.Second ||
		d.Queue.RecordRetention != 0 || d.Queue.RecordStore != report.RecordStoreSQL || d.DataDir != DefaultDataDir {
		t.Errorf("defaults: %+v %+v", d.Queue, d.Report)
	}
}

func TestQueue_FileElementsTakeDefaults(t *testing.T) {
	path := writeFile(t, `
queue:
  queues:
    - name: report:queue
      concurrency: 4
      max-retries: 0
      retry-delays: []
    - name: mail:queue
      handler: webhook
      webhook: {url: "http://127.0.0.1:9000/jobs"}
report:
  delay: 10ms
`)
	cfg, err := load(path, nil, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	a, b := cfg.Queue.Queues[0].Effective(), cfg.Queue.Queues[1].Effective()
	if a.Concurrency != 4 || a.Retries() != 0 || a.BlockTimeout != 30*time.Second {
		t.Errorf("first: %+v", a)
	}
	if b.Handler != queue.HandlerWebhook || b.Webhook.Timeout != 30*time.Second || b.Retries() != 3 || len(b.RetryDelays) != 3 {
		t.Errorf("second: %+v", b)
	}
	if cfg.Report.Delay != 10*time.Millisecond {
		t.Errorf("delay = %s", cfg.Report.Delay)
	}
}

func TestQueue_UnknownElementKey(t *testing.T) {
	_, err := load(writeFile(t, "queue:\n  queues:\n    - name: q\n      concurency: 2\n"), nil, envOf(nil))
	if err == nil || !strings.Contains(err.Error(), `queue.queues[0].concurency`) || !strings.Contains(err.Error(), "concurrency") {
		t.Errorf("err = %v", err)
	}
}

func TestQueue_Env(t *testing.T) {
	cfg, err := load("", nil, envOf(map[string]string{
		"REDSTATE_QUEUE_QUEUES":             `[{name: report:queue, concurrency: 2, retry-delays: [1s, 2s]}, {"name": "x", "handler": "webhook", "webhook": {"url": "https://h/j"}}]`,
		"REDSTATE_QUEUE_RECONCILER_ENABLED": "false",
		"REDSTATE_REPORT_DELAY":             "0",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	q := cfg.Queue.Queues
	if len(q) != 2 || q[0].Concurrency != 2 || !reflect.DeepEqual(q[0].RetryDelays, []time.Duration{time.Second, 2 * time.Second}) ||
		q[1].Webhook.URL != "https://h/j" || cfg.Queue.Reconciler.Enabled || cfg.Report.Delay != 0 {
		t.Errorf("cfg = %+v %+v", cfg.Queue, cfg.Report)
	}
	for _, bad := range []string{`name: x`, `[1, 2]`, `[{nme: x}]`, `[{name: x`} {
		if _, err := load("", nil, envOf(map[string]string{"REDSTATE_QUEUE_QUEUES": bad})); err == nil ||
			!strings.Contains(err.Error(), "REDSTATE_QUEUE_QUEUES") {
			t.Errorf("%q: err = %v", bad, err)
		}
	}
}

func TestQueue_Validation(t *testing.T) {
	neg := -1
	cfg := Default()
	cfg.Queue.RecordRetention = -1
	cfg.Queue.Queues = []queue.Spec{
		{Name: "bad name"},
		{Name: "a", Handler: queue.HandlerWebhook},
		{Name: "a", Handler: "cron"},
		{Name: "b", BlockTimeout: -time.Second, RetryDelays: []time.Duration{}, MaxRetries: &neg, Prefetch: &neg},
		{Name: "c", RetryDelays: []time.Duration{}},
		{Name: "d", Handler: queue.HandlerWebhook, Webhook: queue.WebhookSpec{URL: "ftp://x/y"}},
		{Name: "e", RetryDelays: []time.Duration{0}},
	}
	cfg.Queue.Reconciler.Age = 0
	cfg.Report.Delay = -time.Second
	err := cfg.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"queue.record-retention:", "queue.queues[0].name:", "queue.queues[1].webhook.url: is required",
		"queue.queues[2].name:", "queue.queues[2].handler:", "queue.queues[3].block-timeout:",
		"queue.queues[3].max-retries:", "queue.queues[3].prefetch:", "queue.queues[4].retry-delays: must not be empty",
		"queue.queues[5].webhook.url: must be an http", "queue.queues[6].retry-delays[0]:",
		"queue.reconciler.age:", "report.delay:",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
}

func TestQueue_RedactsWebhookPassword(t *testing.T) {
	cfg := Default()
	cfg.Queue.Queues = append(cfg.Queue.Queues, queue.Spec{Name: "w", Handler: queue.HandlerWebhook, Webhook: queue.WebhookSpec{URL: "https://u:secret@h/j"}})
	r := cfg.Redacted()
	if strings.Contains(r.Queue.Queues[1].Webhook.URL, "secret") || !strings.Contains(cfg.Queue.Queues[1].Webhook.URL, "secret") {
		t.Errorf("redacted %q, original %q", r.Queue.Queues[1].Webhook.URL, cfg.Queue.Queues[1].Webhook.URL)
	}
}

func TestValidate_QueueNamesMustNotShareKeys(t *testing.T) {
	for _, names := range [][]string{
		{"report:queue", "report:queue:dead"},
		{"report:queue", "report:queue:retry"},
		{"jobs", "jobs:processing:worker-1"},
		{"executor:running"},
		{"report:record:5"},
		{"ingenio:publish:build:x"},
	} {
		cfg := Default()
		cfg.Queue.Queues = nil
		for _, n := range names {
			cfg.Queue.Queues = append(cfg.Queue.Queues, queue.Spec{Name: n, Handler: report.HandlerReport})
		}
		err := cfg.Validate()
		if err == nil || !(strings.Contains(err.Error(), "would share keys") || strings.Contains(err.Error(), "keeps its keys")) {
			t.Errorf("queues %v accepted: %v", names, err)
		}
	}
	for _, names := range [][]string{{"report:queue", "report:queue:v2"}, {"a", "b"}, {"emails", "emails-dead"}} {
		cfg := Default()
		cfg.Queue.Queues = nil
		for _, n := range names {
			cfg.Queue.Queues = append(cfg.Queue.Queues, queue.Spec{Name: n, Handler: report.HandlerReport})
		}
		if err := cfg.Validate(); err != nil && (strings.Contains(err.Error(), "share keys") || strings.Contains(err.Error(), "keeps its keys")) {
			t.Errorf("queues %v refused: %v", names, err)
		}
	}
}

func TestReportQueue_ResolvedAndValidated(t *testing.T) {
	cfg := Default()
	if q, on := cfg.Report.QueueIn(cfg.Queue); q != report.DefaultQueue || !on {
		t.Fatalf("default ReportQueue = %q, %v", q, on)
	}
	cfg.Queue.Queues = []queue.Spec{{Name: "jobs", Handler: queue.HandlerWebhook, Webhook: queue.WebhookSpec{URL: "http://127.0.0.1:9/j"}}, {Name: "reports"}}
	if q, on := cfg.Report.QueueIn(cfg.Queue); q != "reports" || !on {
		t.Fatalf("first report-handler queue: ReportQueue = %q, %v", q, on)
	}
	cfg.Queue.Queues = cfg.Queue.Queues[:1]
	if q, on := cfg.Report.QueueIn(cfg.Queue); on {
		t.Fatalf("no report queue: ReportQueue = %q, %v; want off", q, on)
	}
	cfg.Report.Queue = "jobs"
	if q, on := cfg.Report.QueueIn(cfg.Queue); q != "jobs" || !on {
		t.Fatalf("explicit webhook queue: ReportQueue = %q, %v", q, on)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("report.queue naming a webhook queue: %v", err)
	}
	cfg.Report.Queue = "missing"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), `report.queue: "missing" is not one of queue.queues`) {
		t.Fatalf("report.queue naming no queue: %v", err)
	}
	cfg.Report.Queue = ""
	cfg.Queue.Queues = []queue.Spec{{Name: "legacy", Handler: queue.HandlerExternal}}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("handler external: %v", err)
	}
	cfg.Queue.Queues[0].Webhook.URL = "http://127.0.0.1:9/j"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), `is set but handler is "external"`) {
		t.Fatalf("external with a webhook url: %v", err)
	}
}

// TestQueue_PoolsFromFileAndEnv: queue.pools loads from a file and from REDSTATE_QUEUE_POOLS,
// nested member lists included; an unknown member key is named; Validate applies the pool rules.
func TestQueue_PoolsFromFileAndEnv(t *testing.T) {
	file := "queue:\n  queues:\n    - name: report:queue\n    - name: mail:queue\n      handler: webhook\n      webhook: {url: 'https://h/j'}\n" +
		"  pools:\n    - name: main\n      concurrency: 8\n      strict: true\n      queues:\n        - {name: report:queue, weight: 3}\n        - {name: mail:queue, weight: 1}\n"
	cfg, err := load(writeFile(t, file), nil, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	p := cfg.Queue.Pools
	if len(p) != 1 || p[0].Name != "main" || p[0].Concurrency != 8 || !p[0].Strict || len(p[0].Queues) != 2 ||
		p[0].Queues[0].Name != "report:queue" || p[0].Queues[0].EffectiveWeight() != 3 || p[0].Queues[1].EffectiveWeight() != 1 {
		t.Fatalf("pools = %+v", p)
	}

	cfg, err = load(writeFile(t, file), nil, envOf(map[string]string{
		"REDSTATE_QUEUE_POOLS": `[{name: other, queues: [{name: report:queue, weight: 2}, {name: mail:queue}]}]`,
	}))
	if err != nil {
		t.Fatal(err)
	}
	if p := cfg.Queue.Pools; len(p) != 1 || p[0].Name != "other" || p[0].Strict || p[0].Queues[1].EffectiveWeight() != 1 {
		t.Fatalf("pools from the environment = %+v", p)
	}
	if _, err := load("", nil, envOf(map[string]string{"REDSTATE_QUEUE_POOLS": `[{name: x, queues: [{nme: report:queue}]}]`})); err == nil ||
		!strings.Contains(err.Error(), "queue.pools[0].queues[0].nme") {
		t.Errorf("unknown member key: err = %v", err)
	}

	two := 2
	cfg.Queue.Pools[0].Strict, cfg.Queue.Pools[0].Queues[1].Weight = true, &two
	cfg.Queue.Queues[1].Concurrency = 2
	err = cfg.Validate()
	for _, want := range []string{"queue.pools[0].queues[1].weight:", "queue.queues[1].concurrency:"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in %v", want, err)
		}
	}
}
