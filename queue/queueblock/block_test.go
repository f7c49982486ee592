package queueblock_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/component"
	"github.com/redstate/redstate/metrics"
	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/queueblock"
	"github.com/redstate/redstate/redistest"
	"github.com/redstate/redstate/report"
)

// waitFor bounds every wait for a worker to act.
const waitFor = 10 * time.Second

// call is one request a test webhook received.
type call struct {
	body   string
	header http.Header
}

// webhookServer records every call; it answers 204.
func webhookServer(t *testing.T) (string, <-chan call) {
	t.Helper()
	calls := make(chan call, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		calls <- call{body: string(b), header: r.Header.Clone()}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/jobs", calls
}

// mailQueueConfig is the queue section of docs/configuration.md's example: the report queue
// and mail:queue with handler webhook (no retries, so a failure is a dead letter at once).
func mailQueueConfig(url string) queue.Config {
	cfg := report.DefaultQueueConfig()
	cfg.RecordStore = report.RecordStoreMemory
	noRetries := 0
	cfg.Queues = append(cfg.Queues, queue.Spec{Name: "mail:queue", Handler: queue.HandlerWebhook, MaxRetries: &noRetries,
		Webhook: queue.WebhookSpec{URL: url, Timeout: 5 * time.Second}})
	return cfg
}

// openBlock opens and starts the queue block on client (memory when nil) and closes it when
// the test ends.
func openBlock(t *testing.T, client redis.UniversalClient, cfg queue.Config, clients ...queueblock.Client) *queueblock.Block {
	t.Helper()
	ctx := context.Background()
	env := component.Env{Redis: client, Namespace: "qb-" + queue.NewJobID()[:8] + ":", Metrics: metrics.New(),
		Log: slog.New(slog.DiscardHandler), ShutdownTimeout: 5 * time.Second}
	qb, err := queueblock.Open(ctx, env, cfg, report.DefaultConfig(), clients...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if err := qb.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = qb.Close(ctx) })
	return qb
}

// onBackends runs f on the memory broker and on Redis standalone and Cluster.
func onBackends(t *testing.T, f func(t *testing.T, client redis.UniversalClient)) {
	t.Run("memory", func(t *testing.T) { f(t, nil) })
	redistest.RunOnTopologies(t, f)
}

// next returns the next call, failing the test after waitFor.
func next(t *testing.T, calls <-chan call) call {
	t.Helper()
	select {
	case c := <-calls:
		return c
	case <-time.After(waitFor):
		t.Fatal("webhook not called")
		return call{}
	}
}

// deadLetters waits until queue name has n dead letters and returns them, newest first.
func deadLetters(t *testing.T, qb *queueblock.Block, name string, n int) []queue.DeadLetter {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(waitFor)
	for {
		dls, err := qb.Admin(name).DeadLetters(ctx, 0, 100)
		if err == nil && len(dls) >= n {
			return dls
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d dead letters (err %v), want %d", name, len(dls), err, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestOpen_WebhookQueueTakesPlainJobs: a webhook queue configured like the mail:queue example
// runs plain jobs (a Producer's payload, a plain JSON object LPUSHed by a producer outside
// redstate) without the report flow's checks: the webhook gets the payload as sent, with the
// job id, attempt and deadline in headers. A message that is not JSON is dead-lettered with
// its reason, never dropped.
func TestOpen_WebhookQueueTakesPlainJobs(t *testing.T) {
	onBackends(t, func(t *testing.T, client redis.UniversalClient) {
		ctx := context.Background()
		url, calls := webhookServer(t)
		qb := openBlock(t, client, mailQueueConfig(url))
		p, err := queue.NewProducer(qb.Broker(), "mail:queue")
		if err != nil {
			t.Fatal(err)
		}
		before := time.Now().Truncate(time.Second)
		payload := `{"to":"a@example.com","subject":"hi"}`
		job, err := p.Enqueue(ctx, json.RawMessage(payload))
		if err != nil {
			t.Fatal(err)
		}
		c := next(t, calls)
		if c.body != payload {
			t.Errorf("webhook body = %s, want the payload %s", c.body, payload)
		}
		if got := c.header.Get("X-Redstate-Job-Id"); got != job.JobID {
			t.Errorf("X-Redstate-Job-Id = %q, want %q", got, job.JobID)
		}
		if got := c.header.Get("X-Redstate-Attempt"); got != "1" {
			t.Errorf("X-Redstate-Attempt = %q, want 1", got)
		}
		if got := c.header.Get("X-Redstate-Queue"); got != "mail:queue" {
			t.Errorf("X-Redstate-Queue = %q", got)
		}
		if d, err := time.Parse(time.RFC3339, c.header.Get("X-Redstate-Deadline")); err != nil || !d.After(before) {
			t.Errorf("X-Redstate-Deadline = %q (%v), want an RFC 3339 time after the enqueue", c.header.Get("X-Redstate-Deadline"), err)
		}

		plain := `{"to":"b@example.com"}`
		if err := qb.Broker().EnqueueRaw(ctx, "mail:queue", plain); err != nil {
			t.Fatal(err)
		}
		if c := next(t, calls); c.body != plain || c.header.Get("X-Redstate-Attempt") != "1" {
			t.Errorf("LPUSHed plain object: body %s attempt %q, want %s and 1", c.body, c.header.Get("X-Redstate-Attempt"), plain)
		}

		if err := qb.Broker().EnqueueRaw(ctx, "mail:queue", "not json"); err != nil {
			t.Fatal(err)
		}
		dl := deadLetters(t, qb, "mail:queue", 1)[0]
		if dl.Message == nil || !strings.Contains(dl.Message.LastError, "malformed") || string(dl.Message.Payload) != `"not json"` ||
			dl.Message.FailedAt.IsZero() {
			t.Fatalf("dead letter of a malformed message = %s, want the text as its payload and the reason", dl.Raw)
		}
		select {
		case c := <-calls:
			t.Fatalf("the malformed message reached the webhook: %s", c.body)
		default:
		}
		if st, err := qb.Admin("mail:queue").Stats(ctx); err != nil || st != (queue.Stats{Dead: 1}) {
			t.Fatalf("stats = %+v, %v; want one dead letter", st, err)
		}
	})
}

// TestOpen_ReportFlowIsTheReportQueuesClient: the report flow's generator, check and
// dead-letter hook serve the report queue only; a Go handler brought as a Client runs its own
// queue's plain jobs with its own hooks.
func TestOpen_ReportFlowIsTheReportQueuesClient(t *testing.T) {
	onBackends(t, func(t *testing.T, client redis.UniversalClient) {
		ctx := context.Background()
		cfg := report.DefaultQueueConfig()
		cfg.RecordStore = report.RecordStoreMemory
		noRetries := 0
		cfg.Queues = append(cfg.Queues, queue.Spec{Name: "thumbs", Handler: "thumbnail", MaxRetries: &noRetries})
		ran := make(chan string, 4)
		dead := make(chan string, 4)
		qb := openBlock(t, client, cfg, queueblock.Client{Queue: "thumbs", HandlerName: "thumbnail",
			Handler: func(_ context.Context, d *queue.Delivery) error {
				ran <- string(d.Message.Payload)
				if string(d.Message.Payload) == `"fail"` {
					return queue.Permanent(errors.New("cannot scale"))
				}
				return nil
			},
			OnDead: func(_ context.Context, m queue.Message, cause error) error { dead <- cause.Error(); return nil },
		})

		p, err := queue.NewProducer(qb.Broker(), "thumbs")
		if err != nil {
			t.Fatal(err)
		}
		for _, payload := range []string{`{"img":1}`, `"fail"`} {
			if _, err := p.Enqueue(ctx, json.RawMessage(payload)); err != nil {
				t.Fatal(err)
			}
			select {
			case got := <-ran:
				if got != payload {
					t.Fatalf("Go handler got %s, want %s", got, payload)
				}
			case <-time.After(waitFor):
				t.Fatalf("Go handler did not run %s (a job without RecordId on a queue other than the report queue)", payload)
			}
		}
		select {
		case cause := <-dead:
			if !strings.Contains(cause, "cannot scale") {
				t.Errorf("dead-letter hook cause %q", cause)
			}
		case <-time.After(waitFor):
			t.Fatal("the client's dead-letter hook was not called")
		}

		// The report queue keeps the report flow: a job without a RecordId is dead-lettered
		// with the reason, a report job is generated.
		if err := qb.Broker().EnqueueRaw(ctx, report.DefaultQueue, `{"payload":{"img":1}}`); err != nil {
			t.Fatal(err)
		}
		if dl := deadLetters(t, qb, report.DefaultQueue, 1)[0]; dl.Message == nil || !strings.Contains(dl.Message.LastError, "report job without RecordId") {
			t.Fatalf("report queue dead letter %s, want the reason report job without RecordId", dl.Raw)
		}
		if _, err := qb.Reports().Submit(ctx, 41, json.RawMessage(`{"q":3}`)); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(waitFor)
		for {
			st, err := qb.Reports().Status(ctx, 41)
			if err == nil && st.Status == report.StatusDone {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("record 41 = %+v, %v; want generated (status 4)", st, err)
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
}

// TestOpen_ReportQueueWebhookKeepsTheReportBody: the report queue with handler webhook posts
// the report body (with recordId) that existing receivers read, while a plain webhook queue
// posts the payload as sent; both carry the job headers.
func TestOpen_ReportQueueWebhookKeepsTheReportBody(t *testing.T) {
	ctx := context.Background()
	url, calls := webhookServer(t)
	cfg := mailQueueConfig(url)
	cfg.Queues[0].Handler, cfg.Queues[0].Webhook.URL = queue.HandlerWebhook, url
	qb := openBlock(t, nil, cfg)
	if _, err := qb.Reports().Submit(ctx, 7, json.RawMessage(`{"q":1}`)); err != nil {
		t.Fatal(err)
	}
	c := next(t, calls)
	var body report.WebhookJob
	if err := json.Unmarshal([]byte(c.body), &body); err != nil || body.RecordID != 7 || body.Queue != report.DefaultQueue {
		t.Fatalf("report queue webhook body %s (%v), want the report body of record 7", c.body, err)
	}
	if c.header.Get("X-Redstate-Attempt") != "1" || c.header.Get("X-Redstate-Job-Id") == "" {
		t.Errorf("report queue call headers %v", c.header)
	}
	if err := qb.Broker().EnqueueRaw(ctx, "mail:queue", `{"to":"c@example.com"}`); err != nil {
		t.Fatal(err)
	}
	if c := next(t, calls); c.body != `{"to":"c@example.com"}` {
		t.Fatalf("mail:queue body %s, want the payload", c.body)
	}
}

// TestOpen_RefusesAHandlerNoClientServes: handler report on a queue other than the report
// queue, a client for no configured queue, two clients for one queue and a client naming the
// queue's own handler are EINVALID, before any worker runs.
func TestOpen_RefusesAHandlerNoClientServes(t *testing.T) {
	ctx := context.Background()
	env := component.Env{Log: slog.New(slog.DiscardHandler)}
	base := func() queue.Config {
		cfg := report.DefaultQueueConfig()
		cfg.RecordStore = report.RecordStoreMemory
		return cfg
	}
	h := func(context.Context, *queue.Delivery) error { return nil }
	for _, tc := range []struct {
		name    string
		extra   queue.Spec
		clients []queueblock.Client
		want    string
	}{
		{"report handler on another queue", queue.Spec{Name: "other", Handler: report.HandlerReport}, nil, `queue other: handler "report" serves no flow`},
		{"client for no queue", queue.Spec{Name: "other", Handler: queue.HandlerExternal},
			[]queueblock.Client{{Queue: "missing", HandlerName: "x", Handler: h}}, `"missing": not one of queue.queues`},
		{"client on the report queue", queue.Spec{Name: "other", Handler: queue.HandlerExternal},
			[]queueblock.Client{{Queue: report.DefaultQueue, HandlerName: "x", Handler: h}}, "two clients"},
		{"client named webhook", queue.Spec{Name: "other", Handler: queue.HandlerWebhook, Webhook: queue.WebhookSpec{URL: "http://127.0.0.1:1/"}},
			[]queueblock.Client{{Queue: "other", HandlerName: queue.HandlerWebhook, Handler: h}}, "is the queue's own"},
		{"handler without its name", queue.Spec{Name: "other", Handler: queue.HandlerExternal},
			[]queueblock.Client{{Queue: "other", Handler: h}}, "needs its HandlerName"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base()
			cfg.Queues = append(cfg.Queues, tc.extra)
			qb, err := queueblock.Open(ctx, env, cfg, report.DefaultConfig(), tc.clients...)
			if err == nil {
				_ = qb.Close(ctx)
			}
			if !redstate.IsCode(err, redstate.EINVALID) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open = %v, want EINVALID with %q", err, tc.want)
			}
		})
	}
}
