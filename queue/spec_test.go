package queue_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/memqueue"
)

// TestSpec_DefaultsAreTheWorkers: a queue of the configuration with no settings runs a worker
// with exactly the worker's own defaults (one source of defaults).
func TestSpec_DefaultsAreTheWorkers(t *testing.T) {
	b := memqueue.NewBroker(memqueue.Options{})
	h := func(context.Context, *queue.Delivery) error { return nil }
	plain, err := queue.NewWorker(b, h, queue.WorkerSettings{Queue: "jobs"})
	if err != nil {
		t.Fatal(err)
	}
	for name, spec := range map[string]queue.Spec{"DefaultSpec": queue.DefaultSpec("jobs"), "Effective": queue.Spec{Name: "jobs"}.Effective()} {
		w, err := queue.NewWorker(b, h, spec.Worker())
		if err != nil {
			t.Fatal(err)
		}
		got, want := w.Settings(), plain.Settings()
		got.ConsumerID, got.Logger, got.Now = "", nil, nil
		want.ConsumerID, want.Logger, want.Now = "", nil, nil
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: worker config %+v, want the worker's defaults %+v", name, got, want)
		}
	}
	if d := queue.DefaultSpec("jobs"); d.Webhook.Timeout != queue.DefaultWebhookTimeout || d.Prefetch != nil || d.Handler != "" {
		t.Errorf("DefaultSpec = %+v", d)
	}
}

func TestSpec_WorkerSpellsZeroAsNone(t *testing.T) {
	zero := 0
	c := queue.Spec{Name: "jobs", MaxRetries: &zero, Prefetch: &zero}.Effective().Worker()
	if !c.NoRetries || c.MaxRetries != 0 || !c.NoPrefetch || c.Prefetch != 0 {
		t.Errorf("config = %+v", c)
	}
	if c := (queue.Spec{Name: "jobs", Concurrency: 4}).Effective().Worker(); c.NoPrefetch || c.Prefetch != 4 || c.NoRetries || c.MaxRetries != queue.DefaultMaxRetries {
		t.Errorf("config = %+v", c)
	}
}

func TestSpec_ValidateAtNamesEveryKey(t *testing.T) {
	if err := queue.DefaultSpec("jobs").ValidateAt("q.", "mine"); err == nil || !strings.Contains(err.Error(), `q.handler: "" is not one of mine, webhook, external`) {
		t.Errorf("empty handler: %v", err)
	}
	neg := -1
	s := queue.Spec{Name: "bad name", Concurrency: -1, BlockTimeout: -time.Second, ErrorDelay: -time.Second, Lease: -time.Second,
		RetryDelays: []time.Duration{time.Second, 0}, MaxRetries: &neg, Prefetch: &neg, Handler: "cron",
		Webhook: queue.WebhookSpec{Timeout: -time.Second}}
	err := s.ValidateAt("queue.queues[3].")
	if err == nil {
		t.Fatal("no error")
	}
	for _, key := range []string{"name", "concurrency", "block-timeout", "error-delay", "lease", "webhook.timeout",
		"retry-delays[1]", "max-retries", "prefetch", "handler"} {
		if !strings.Contains(err.Error(), "queue.queues[3]."+key+":") {
			t.Errorf("%s missing from %v", key, err)
		}
	}
	for _, c := range []struct {
		spec queue.Spec
		want string
	}{
		{queue.Spec{Name: "a", Handler: queue.HandlerWebhook}, "webhook.url: is required"},
		{queue.Spec{Name: "a", Handler: queue.HandlerWebhook, Webhook: queue.WebhookSpec{URL: "ftp://u:pw@x/y"}}, "webhook.url: must be an http or https URL with a host"},
		{queue.Spec{Name: "a", Handler: queue.HandlerExternal, Webhook: queue.WebhookSpec{URL: "http://x/y"}}, `webhook.url: is set but handler is "external"`},
		{queue.Spec{Name: "a", RetryDelays: []time.Duration{}, Handler: queue.HandlerExternal}, "retry-delays: must not be empty when max-retries is 3"},
	} {
		err := c.spec.ValidateAt("")
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), ":pw@") {
			t.Errorf("%+v: %v, want %q", c.spec, err, c.want)
		}
	}
	if err := (queue.Spec{Name: "a", Handler: queue.HandlerWebhook, Webhook: queue.WebhookSpec{URL: "https://h/j"}}).ValidateAt(""); err != nil {
		t.Errorf("valid webhook queue: %v", err)
	}
}

// TestSpec_ZeroRetryDelayRefused: the configuration and the worker agree that a retry delay
// must be positive (the worker accepted 0 before they shared the rule).
func TestSpec_ZeroRetryDelayRefused(t *testing.T) {
	s := queue.Spec{Name: "jobs", RetryDelays: []time.Duration{time.Second, 0}, Handler: queue.HandlerExternal}
	if err := s.ValidateAt(""); err == nil || !strings.Contains(err.Error(), "retry-delays[1]: must be positive") {
		t.Errorf("ValidateAt: %v", err)
	}
	h := func(context.Context, *queue.Delivery) error { return nil }
	if _, err := queue.NewWorker(memqueue.NewBroker(memqueue.Options{}), h, s.Worker()); !redstate.IsCode(err, redstate.EINVALID) {
		t.Errorf("NewWorker: %v", err)
	}
}
