package queue

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/redact"
)

// Handlers every program built on the queue offers (Spec.Handler); a program adds its own
// (ValidateAt's handlers).
const (
	// HandlerWebhook POSTs each job to Spec.Webhook.URL (WebhookHandler).
	HandlerWebhook = "webhook"
	// HandlerExternal runs no worker: a consumer outside the program takes the queue's jobs.
	HandlerExternal = "external"
)

// Spec is one queue of the configuration (an element of queue.queues) and the settings of its
// worker. Zero fields take the defaults stated on them (DefaultSpec), see Effective; Worker
// turns it into the worker's WorkerSettings.
type Spec struct {
	// Name is the queue name, e.g. "jobs": 1..200 characters from [A-Za-z0-9:_.-]
	// (ValidateQueueName).
	Name string `koanf:"name"`
	// Concurrency is the number of consumers (default DefaultConcurrency, serial consumption).
	// A queue in a pool (Config.Pools) shares the pool's and sets none of its own.
	Concurrency int `koanf:"concurrency"`
	// BlockTimeout is the blocking dequeue timeout (default DefaultBlockTimeout).
	BlockTimeout time.Duration `koanf:"block-timeout"`
	// ErrorDelay is the wait after a broker error (default DefaultErrorDelay).
	ErrorDelay time.Duration `koanf:"error-delay"`
	// RetryDelays are the waits before retry 1, 2, ... (default DefaultRetryDelays: 10s, 30s,
	// 60s); the last one repeats.
	RetryDelays []time.Duration `koanf:"retry-delays"`
	// MaxRetries is the number of retries before dead-lettering (default DefaultMaxRetries;
	// 0 = none).
	MaxRetries *int `koanf:"max-retries"`
	// Lease is the consumer lease; a crashed consumer's jobs are redelivered after it
	// (default DefaultLease).
	Lease time.Duration `koanf:"lease"`
	// Prefetch is how many jobs a worker may hold dequeued beyond the running ones (default:
	// Concurrency; 0 = none; a queue in a pool shares the pool's). Prefetched jobs are in the worker's in-flight list, so a crash
	// redelivers them after the lease; set 0 for long jobs spread over several processes.
	Prefetch *int `koanf:"prefetch"`
	// Handler selects what consumes the jobs: HandlerWebhook, HandlerExternal, or a handler
	// the program offers itself (ValidateAt's handlers). The program chooses the default of an
	// empty Handler; Effective leaves it empty.
	Handler string `koanf:"handler"`
	// Webhook is the endpoint of handler webhook.
	Webhook WebhookSpec `koanf:"webhook"`
}

// WebhookSpec is the HTTP endpoint a webhook queue POSTs each job to (WebhookHandler).
type WebhookSpec struct {
	// URL is the http(s) endpoint (required for handler webhook).
	URL string `koanf:"url"`
	// Timeout bounds one call (default DefaultWebhookTimeout).
	Timeout time.Duration `koanf:"timeout"`
	// Secret signs every call (HMAC-SHA256, package webhook); empty: calls are unsigned.
	Secret string `koanf:"secret"`
}

// DefaultSpec returns the queue name with every default (the legacy report queue's constants where it has
// them): one consumer, a 30s blocking dequeue, a 5s error delay, retries after 10/30/60s, at
// most 3, a 30s lease, webhook calls bounded by 30s. Prefetch and Handler stay unset: the
// prefetch follows the concurrency, the handler is the program's choice.
func DefaultSpec(name string) Spec {
	maxRetries := DefaultMaxRetries
	return Spec{
		Name:         name,
		Concurrency:  DefaultConcurrency,
		BlockTimeout: DefaultBlockTimeout,
		ErrorDelay:   DefaultErrorDelay,
		RetryDelays:  DefaultRetryDelays(),
		MaxRetries:   &maxRetries,
		Lease:        DefaultLease,
		Webhook:      WebhookSpec{Timeout: DefaultWebhookTimeout},
	}
}

// Effective returns s with every zero field set to DefaultSpec's value (the name, the handler
// and the webhook URL and secret excepted) and an unset Prefetch set to the effective
// Concurrency.
func (s Spec) Effective() Spec {
	d := DefaultSpec(s.Name)
	if s.Concurrency == 0 {
		s.Concurrency = d.Concurrency
	}
	if s.BlockTimeout == 0 {
		s.BlockTimeout = d.BlockTimeout
	}
	if s.ErrorDelay == 0 {
		s.ErrorDelay = d.ErrorDelay
	}
	if s.RetryDelays == nil {
		s.RetryDelays = d.RetryDelays
	}
	if s.MaxRetries == nil {
		s.MaxRetries = d.MaxRetries
	}
	if s.Lease == 0 {
		s.Lease = d.Lease
	}
	if s.Prefetch == nil {
		prefetch := s.Concurrency
		s.Prefetch = &prefetch
	}
	if s.Webhook.Timeout == 0 {
		s.Webhook.Timeout = d.Webhook.Timeout
	}
	return s
}

// Retries returns the effective MaxRetries.
func (s Spec) Retries() int {
	if s.MaxRetries == nil {
		return DefaultMaxRetries
	}
	return *s.MaxRetries
}

// Worker returns the WorkerSettings of s: its queue and its settings, with MaxRetries 0 and
// Prefetch 0 spelled as NoRetries and NoPrefetch. The caller adds the rest (consumer id,
// shutdown timeout, logger, observer, hooks).
func (s Spec) Worker() WorkerSettings {
	c := WorkerSettings{
		Queue:        s.Name,
		Concurrency:  s.Concurrency,
		BlockTimeout: s.BlockTimeout,
		ErrorDelay:   s.ErrorDelay,
		RetryDelays:  s.RetryDelays,
		MaxRetries:   s.Retries(),
		NoRetries:    s.Retries() == 0,
		Lease:        s.Lease,
	}
	if s.Prefetch != nil {
		c.Prefetch, c.NoPrefetch = *s.Prefetch, *s.Prefetch == 0
	}
	return c
}

// ValidateAt returns every problem of s at once, each naming its key after prefix (e.g.
// "queue.queues[0]." gives "queue.queues[0].lease: must be positive, got -1s"). handlers
// are the handler names the program offers besides HandlerWebhook and HandlerExternal; the
// program puts its default in an empty Handler before calling. Whether names are unique or
// overlap other keys is the caller's to check, as it knows every queue.
func (s Spec) ValidateAt(prefix string, handlers ...string) error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s%s: %s", prefix, key, fmt.Sprintf(format, args...)))
	}
	if err := ValidateQueueName(s.Name); err != nil {
		add("name", "%s", redstate.ErrorMessage(err))
	}
	if s.Concurrency < 0 {
		add("concurrency", "must be at least 1, got %d", s.Concurrency)
	}
	for _, d := range []struct {
		key string
		d   time.Duration
	}{{"block-timeout", s.BlockTimeout}, {"error-delay", s.ErrorDelay}, {"lease", s.Lease}, {"webhook.timeout", s.Webhook.Timeout}} {
		if d.d < 0 {
			add(d.key, "must be positive, got %s", d.d)
		}
	}
	for j, d := range s.RetryDelays {
		if d <= 0 {
			add(fmt.Sprintf("retry-delays[%d]", j), "must be positive, got %s", d)
		}
	}
	if s.Prefetch != nil && *s.Prefetch < 0 {
		add("prefetch", "must not be negative, got %d (0 means no prefetch)", *s.Prefetch)
	}
	if s.MaxRetries != nil && *s.MaxRetries < 0 {
		add("max-retries", "must not be negative, got %d (0 means no retries)", *s.MaxRetries)
	}
	if eff := s.Effective(); eff.Retries() > 0 && len(eff.RetryDelays) == 0 {
		add("retry-delays", "must not be empty when max-retries is %d (set max-retries: 0 for no retries)", eff.Retries())
	}
	known := append(append([]string{}, handlers...), HandlerWebhook, HandlerExternal)
	switch {
	case s.Handler == HandlerWebhook:
		u, err := url.Parse(s.Webhook.URL)
		switch {
		case s.Webhook.URL == "":
			add("webhook.url", "is required for handler webhook (e.g. http://127.0.0.1:9000/jobs)")
		case err != nil:
			add("webhook.url", "is not a URL: %v", errors.Unwrap(err))
		case u.Scheme != "http" && u.Scheme != "https", u.Host == "":
			add("webhook.url", "must be an http or https URL with a host, got %q", redact.URL(s.Webhook.URL))
		}
	case !slices.Contains(known, s.Handler):
		add("handler", "%q is not one of %s", s.Handler, strings.Join(known, ", "))
	case s.Webhook.URL != "":
		add("webhook.url", "is set but handler is %q; set handler: webhook", s.Handler)
	}
	return errors.Join(errs...)
}
