package queueblock

import (
	"fmt"
	"slices"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
)

// Client is what one flow on the queue block brings to one queue of queue.queues: the report
// flow on the report queue (reportClient), or a Go handler of a program that embeds the block
// (passed to Open). A queue without a client is a plain queue: its worker runs its webhook
// (the payload as sent, queue.PayloadWebhookBody) on every message that decodes, and
// dead-letters the others with the reason.
type Client struct {
	// Queue is the queue of queue.queues the client serves (required).
	Queue string
	// HandlerName is the value of queue.queues[].handler that selects Handler (e.g.
	// report.HandlerReport); required with Handler, and neither queue.HandlerWebhook nor
	// queue.HandlerExternal, which are the queue's own.
	HandlerName string
	// Handler runs the queue's jobs when the queue's handler is HandlerName; nil when the
	// client brings no handler of its own (its queue then must be webhook or external).
	Handler queue.Handler
	// Check vets every message of the queue before any handler runs, webhook included
	// (queue.WorkerSettings.Check): a message it rejects is dead-lettered with the reason.
	// nil: every message that decodes is a job.
	Check func(queue.Message) error
	// OnDead is told about every job the queue's worker dead-letters after a handler failed
	// (queue.WorkerSettings.OnDead). nil: nothing is told.
	OnDead queue.DeadHook
	// WebhookBody builds the body of the queue's webhook calls when its handler is webhook.
	// nil: the payload as sent (queue.PayloadWebhookBody).
	WebhookBody queue.WebhookBody
}

// clientsByQueue indexes clients by queue, checking that each names a queue of specs, once,
// with a valid handler name. Errors: EINVALID.
func clientsByQueue(specs []queue.Spec, clients []Client) (map[string]Client, error) {
	byQueue := make(map[string]Client, len(clients))
	for _, c := range clients {
		_, dup := byQueue[c.Queue]
		switch {
		case !slices.ContainsFunc(specs, func(s queue.Spec) bool { return s.Name == c.Queue }):
			return nil, redstate.Errorf(redstate.EINVALID, "queue client for %q: not one of queue.queues", c.Queue)
		case dup:
			return nil, redstate.Errorf(redstate.EINVALID, "queue %s: two clients; a queue has one", c.Queue)
		case (c.Handler == nil) != (c.HandlerName == ""):
			return nil, redstate.Errorf(redstate.EINVALID, "queue client for %q: a Handler needs its HandlerName and a HandlerName its Handler", c.Queue)
		case c.HandlerName == queue.HandlerWebhook || c.HandlerName == queue.HandlerExternal:
			return nil, redstate.Errorf(redstate.EINVALID, "queue client for %q: handler name %q is the queue's own", c.Queue, c.HandlerName)
		}
		byQueue[c.Queue] = c
	}
	return byQueue, nil
}

// handlerFor returns the handler of spec's worker with c, the queue's client (the zero Client
// when it has none), or nil for handler external (no worker here). Errors: EINVALID when no
// client serves the queue's handler.
func handlerFor(spec queue.Spec, c Client) (queue.Handler, error) {
	switch {
	case spec.Handler == queue.HandlerExternal:
		return nil, nil
	case spec.Handler == queue.HandlerWebhook:
		return queue.WebhookHandler(spec.Webhook.URL, spec.Webhook.Secret, spec.Webhook.Timeout, nil, c.WebhookBody), nil
	case c.Handler != nil && spec.Handler == c.HandlerName:
		return c.Handler, nil
	}
	return nil, redstate.Errorf(redstate.EINVALID, "queue %s: handler %q serves no flow on this queue (%s)", spec.Name, spec.Handler, handlerHint(spec.Name, c))
}

// handlerHint says which handlers a queue may have.
func handlerHint(name string, c Client) string {
	if c.HandlerName != "" {
		return fmt.Sprintf("use %s, %s or %s", c.HandlerName, queue.HandlerWebhook, queue.HandlerExternal)
	}
	return fmt.Sprintf("queue %s has no Go handler: use %s or %s", name, queue.HandlerWebhook, queue.HandlerExternal)
}
