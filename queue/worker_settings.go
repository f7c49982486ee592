package queue

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/keyspace"
)

// Worker defaults (those of the legacy report queue, where it has them).
const (
	// DefaultConcurrency: one job at a time (serial consumption).
	DefaultConcurrency = 1
	// DefaultBlockTimeout bounds one blocking Dequeue (the legacy queue's BrpopTimeout).
	DefaultBlockTimeout = 30 * time.Second
	// DefaultErrorDelay is the wait after a broker error (the legacy queue's ErrorRecoveryDelay).
	DefaultErrorDelay = 5 * time.Second
	// DefaultMaxRetries is how often a failed job is retried (the legacy queue's MaxRetryCount).
	DefaultMaxRetries = 3
	// DefaultLease is how long a consumer's jobs stay its own without a heartbeat.
	DefaultLease = 30 * time.Second
	// DefaultPromoteInterval is how often due retries are promoted and expired leases recovered.
	DefaultPromoteInterval = time.Second
	// DefaultShutdownTimeout is how long running handlers may go on after shutdown begins.
	DefaultShutdownTimeout = time.Minute
)

// DefaultRetryDelays returns the default retry schedule (the legacy queue's RetryDelays): 10s, 30s,
// 60s.
func DefaultRetryDelays() []time.Duration {
	return []time.Duration{10 * time.Second, 30 * time.Second, 60 * time.Second}
}

// WorkerSettings configures a Worker. Zero fields take the defaults stated on them.
type WorkerSettings struct {
	// Queue is the queue to consume (required).
	Queue string
	// ConsumerID names this consumer in the broker (its in-flight set and lease). It must be
	// unique among live consumers. Default "<hostname>-<pid>-<random>".
	ConsumerID string
	// Concurrency is how many jobs run at once. Default 1 (serial consumption).
	Concurrency int
	// Prefetch is how many jobs the worker may hold dequeued beyond the ones running: they wait
	// in its in-flight list (recovered with it if it crashes) and in memory, so that a handler
	// that finishes finds the next job without a round trip, and one DequeueBatch call serves
	// several jobs. Jobs prefetched but not started at shutdown go back to the head of the
	// pending list. Default Concurrency; set NoPrefetch for none (a worker then dequeues only
	// for idle handlers: better for long jobs shared by several processes, where a prefetched
	// job waits for a busy handler while another process may be idle).
	Prefetch int
	// NoPrefetch, when true, disables prefetching (Prefetch is ignored).
	NoPrefetch bool
	// BlockTimeout is how long one Dequeue blocks on an empty queue. Default 30s.
	BlockTimeout time.Duration
	// ErrorDelay is how long the worker waits after a broker error before resuming. Default 5s.
	ErrorDelay time.Duration
	// RetryDelays[i] is the wait before retry i+1 (positive); the last entry is reused when
	// MaxRetries exceeds its length. Default DefaultRetryDelays (10s, 30s, 60s).
	RetryDelays []time.Duration
	// MaxRetries is how many times a failed job is retried before it is dead-lettered.
	// Default 3; set NoRetries for none.
	MaxRetries int
	// NoRetries, when true, dead-letters a job on its first failure (MaxRetries is ignored).
	NoRetries bool
	// Lease is how long this consumer's in-flight jobs stay its own without a heartbeat; the
	// worker heartbeats every Lease/3. After a crash its jobs are redelivered within about
	// Lease + PromoteInterval. Default 30s.
	Lease time.Duration
	// PromoteInterval is how often due retries are promoted and expired leases recovered.
	// Default 1s.
	PromoteInterval time.Duration
	// ShutdownTimeout is how long running handlers may continue after Run's ctx is canceled
	// before their own ctx is canceled. Default 1m.
	ShutdownTimeout time.Duration
	// Logger receives the worker's logs. Default slog.Default().
	Logger *slog.Logger
	// Observer, if non-nil, receives every job outcome.
	Observer Observer
	// Now is the clock used for retry due times. Default time.Now.
	Now func() time.Time
	// Check, if non-nil, vets every decoded message before the handler runs: a message it
	// rejects is malformed, and is dead-lettered with the reason like one that is not valid
	// JSON (MalformedDeadLetter; a queue's user states here which messages its jobs are).
	Check func(Message) error
	// OnDead, if non-nil, is called for every job the worker dead-letters (see DeadHook).
	OnDead DeadHook
}

// withDefaults returns c with every zero field set to its default.
func (c WorkerSettings) withDefaults() WorkerSettings {
	// The settings a Worker of one queue shares with a pool take the pool's defaults.
	p := PoolSettings{ConsumerID: c.ConsumerID, Concurrency: c.Concurrency, Prefetch: c.Prefetch, NoPrefetch: c.NoPrefetch,
		ShutdownTimeout: c.ShutdownTimeout, Logger: c.Logger}.withDefaults()
	c.ConsumerID, c.Concurrency, c.Prefetch, c.ShutdownTimeout, c.Logger = p.ConsumerID, p.Concurrency, p.Prefetch, p.ShutdownTimeout, p.Logger
	if c.BlockTimeout == 0 {
		c.BlockTimeout = DefaultBlockTimeout
	}
	if c.ErrorDelay == 0 {
		c.ErrorDelay = DefaultErrorDelay
	}
	if c.RetryDelays == nil {
		c.RetryDelays = DefaultRetryDelays()
	}
	if c.NoRetries {
		c.MaxRetries = 0
	} else if c.MaxRetries == 0 {
		c.MaxRetries = DefaultMaxRetries
	}
	if c.Lease == 0 {
		c.Lease = DefaultLease
	}
	if c.PromoteInterval == 0 {
		c.PromoteInterval = DefaultPromoteInterval
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// validate checks defaulted settings. Errors: EINVALID.
func (c WorkerSettings) validate() error {
	if err := ValidateQueueName(c.Queue); err != nil {
		return err
	}
	if err := ValidateConsumerID(c.ConsumerID); err != nil {
		return err
	}
	switch {
	case c.Concurrency < 1:
		return redstate.Errorf(redstate.EINVALID, "queue worker: Concurrency must be >= 1, got %d", c.Concurrency)
	case c.Prefetch < 0:
		return redstate.Errorf(redstate.EINVALID, "queue worker: Prefetch must be >= 0, got %d", c.Prefetch)
	case c.BlockTimeout < 0, c.ErrorDelay < 0, c.Lease < 0, c.PromoteInterval < 0, c.ShutdownTimeout < 0:
		return redstate.Errorf(redstate.EINVALID, "queue worker: durations must be positive")
	case c.MaxRetries < 0:
		return redstate.Errorf(redstate.EINVALID, "queue worker: MaxRetries must be >= 0, got %d", c.MaxRetries)
	case c.MaxRetries > 0 && len(c.RetryDelays) == 0:
		return redstate.Errorf(redstate.EINVALID, "queue worker: RetryDelays must not be empty when MaxRetries > 0")
	}
	for _, d := range c.RetryDelays {
		if d <= 0 {
			return redstate.Errorf(redstate.EINVALID, "queue worker: RetryDelays must be positive, got %s", d)
		}
	}
	return nil
}

// retryDelay returns the wait before the retry that follows attempt retryCount (0-based).
func (c WorkerSettings) retryDelay(retryCount int) time.Duration {
	if retryCount < len(c.RetryDelays) {
		return c.RetryDelays[retryCount]
	}
	return c.RetryDelays[len(c.RetryDelays)-1]
}

// DefaultConsumerID returns "<hostname>-<pid>-<random>", sanitized to ValidateConsumerID's
// alphabet.
func DefaultConsumerID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "host"
	}
	b := []byte(host)
	for i, c := range b {
		if !keyspace.IDByte(c, "._-") {
			b[i] = '_'
		}
	}
	if len(b) > 100 {
		b = b[:100]
	}
	return fmt.Sprintf("%s-%d-%08x", b, os.Getpid(), rand.Uint32())
}
