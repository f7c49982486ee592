// Package redisqueue is the Redis backend of the queue block: a queue.Broker (Broker) with the
// semantics checked by the queuetest conformance suites.
// The same code runs on a standalone server, behind Sentinel (a failover *redis.Client) and on
// Redis Cluster.
//
// Layout of one queue named <q> (names from queue.NewKeys, standalone/Sentinel names
// shown, on Cluster every key carries the hash tag "{<q>}" instead so that every script's keys
// share one slot):
//
//	<q>                        LIST pending: producers LPUSH (tail), consumers take the right end
//	<q>:processing:<consumer>  LIST a consumer's in-flight jobs (LMOVE/BLMOVE pending RIGHT → LEFT)
//	<q>:consumers              ZSET consumer leases: member consumer id, score deadline (Unix ms)
//	<q>:retry                  ZSET retry schedule: member encoded message, score due (Unix ms)
//	<q>:dead                   LIST dead letters, newest at the left (LPUSH)
//
// A producer outside redstate that runs `LPUSH <q> '{"RetryCount":0,…}'` is served as is.
//
// Enqueue and EnqueueRaw mark what they push, and every script that moves, pushes or counts
// marks its call (internal/resend), so that a command go-redis sends twice takes effect once;
// see scripts.go and docs/resilience.md.
//
// Round trips: Enqueue, EnqueueRaw, Ack, AckBatch (one script per consumer, pipelined), Release,
// Retry, Bury, Heartbeat, PromoteDue, DeadLetters, RequeueDead, RequeueAllDead and PurgeDead are
// one round trip each; Dequeue and DequeueBatch are one when a job is waiting (DequeueBatch: up to
// max jobs in one script call) and otherwise add one CLIENT ID round trip and one blocking BLMOVE
// per wait (see dequeue.go); RecoverExpired is two (list the expired consumers, then one pipeline
// of one script per consumer); Stats is two; HasJob is two for queues below scanChunk entries per
// place.
//
// Lease deadlines follow the Redis server clock (TIME inside the scripts) unless Options.Now
// is set, so many hosts agree on expiry without synchronized clocks.
package redisqueue

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/coalesce"
	"github.com/redstate/redstate/internal/resend"
	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/redisconn"
)

var _ queue.Broker = (*Broker)(nil)

// Options configure a Broker. The zero value is ready to use.
type Options struct {
	// Namespace is prepended to every key (e.g. "prod-"); default "" (the queue names verbatim, as
	// producers outside redstate use them). At most 100 characters from [A-Za-z0-9:_.-].
	Namespace string
	// Now, if set, is the clock for lease deadlines (Heartbeat, Dequeue's lease check,
	// RecoverExpired), as in memqueue. Nil (the default, and the right choice in production):
	// the Redis server clock, which every host shares. Retry due times and PromoteDue's now
	// are passed explicitly by the caller and never read a clock.
	Now func() time.Time
}

// Broker is the Redis queue.Broker. It is safe for concurrent use.
type Broker struct {
	client  redis.UniversalClient
	single  *redis.Client        // the client unless Cluster
	cluster *redis.ClusterClient // nil unless Cluster
	ns      string
	now     func() time.Time // nil: server clock
	window  time.Duration    // lifetime of enqueue and call markers

	keyCache sync.Map     // queue name → *queue.Keys (keys)
	keyCount atomic.Int64 // entries of keyCache

	enqueues *coalesce.Group[enqueueReq, enqueueRes] // EnqueueJob calls leaving together
	pushes   *coalesce.Group[pushReq, struct{}]      // Enqueue and EnqueueRaw calls leaving together
}

// New returns a Broker on client, which may be a *redis.Client (standalone or Sentinel
// failover) or a *redis.ClusterClient (detected by type, which selects the hash-tagged key
// names). Other clients, such as *redis.Ring, are rejected: a Ring spreads keys without slots,
// so the scripts' multi-key atomicity could not hold. Errors: EINVALID.
func New(client redis.UniversalClient, opts Options) (*Broker, error) {
	if client == nil {
		return nil, redstate.Errorf(redstate.EINVALID, "redisqueue: a Redis client is required")
	}
	b := &Broker{client: client, cluster: redisconn.AsCluster(client), now: opts.Now, window: max(resend.Window(client), queue.DedupWindow)}
	b.single, _ = client.(*redis.Client)
	if b.single == nil && b.cluster == nil {
		return nil, redstate.Errorf(redstate.EINVALID, "redisqueue: %T is not supported; use a standalone, Sentinel or Cluster client", client)
	}
	if err := ValidateNamespace(opts.Namespace); err != nil {
		return nil, err
	}
	b.ns = opts.Namespace
	b.enqueues = b.newEnqueueGroup()
	b.pushes = b.newPushGroup()
	return b, nil
}

// ValidateNamespace checks a key namespace: empty, or up to 100 characters from
// [A-Za-z0-9:_.-] (no braces, so it never sets a Cluster hash tag). Errors: EINVALID.
func ValidateNamespace(ns string) error {
	if ns == "" {
		return nil
	}
	if len(ns) > 100 {
		return redstate.Errorf(redstate.EINVALID, "redisqueue: namespace must be at most 100 characters")
	}
	if err := queue.ValidateQueueName(ns); err != nil {
		return redstate.Errorf(redstate.EINVALID, "redisqueue: namespace %q: only letters, digits and :_.- are allowed", ns)
	}
	return nil
}

// keyCacheSize bounds how many queues' key names a Broker keeps built (keys): a worker asks for
// the same queue's names several times per round trip.
const keyCacheSize = 1024

// keys returns the keys of queue name (already validated), built once for up to keyCacheSize
// queues.
func (b *Broker) keys(name string) queue.Keys {
	if k, ok := b.keyCache.Load(name); ok {
		return *k.(*queue.Keys)
	}
	k := queue.NewKeys(redstate.Prefix(b.ns, name), b.cluster != nil)
	if b.keyCount.Load() < keyCacheSize {
		if _, loaded := b.keyCache.LoadOrStore(name, &k); !loaded {
			b.keyCount.Add(1)
		}
	}
	return k
}

// marker returns the marker of a new call of a Once script on queue name.
func (b *Broker) marker(name string) resend.Marker {
	return resend.Marker{Key: b.keys(name).Once(resend.Token()), Window: b.window}
}

// nowArg is the "now" ARGV of the lease scripts: Options.Now in Unix ms, or "" for the
// server clock.
func (b *Broker) nowArg() string {
	if b.now == nil {
		return ""
	}
	return formatInt(b.now().UnixMilli())
}

// node returns the client of the server holding key: the client itself unless Cluster, else
// the master serving key's slot. Dequeue needs it for a dedicated connection.
func (b *Broker) node(ctx context.Context, key string) (*redis.Client, error) {
	if b.cluster == nil {
		return b.single, nil
	}
	n, err := b.cluster.MasterForKey(ctx, key)
	if err != nil {
		return nil, mapErr(err, "locate queue node")
	}
	return n, nil
}

// reloadOnMoved refreshes the Cluster slot map after a redirect met on a node connection.
func (b *Broker) reloadOnMoved(ctx context.Context, err error) {
	if b.cluster != nil && isMoved(err) {
		b.cluster.ReloadState(ctx)
	}
}

// notInFlight is the ECONFLICT of Ack, Retry and Bury.
func notInFlight(d *queue.Delivery) error {
	return redstate.Errorf(redstate.ECONFLICT, "job is no longer in flight at consumer %q (its lease expired and it was recovered)", d.ConsumerID)
}
