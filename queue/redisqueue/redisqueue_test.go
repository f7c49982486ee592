package redisqueue_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/resend"
	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/queuetest"
	"github.com/redstate/redstate/queue/redisqueue"
	"github.com/redstate/redstate/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// uniqueNS returns a fresh namespace, so that stores sharing a server never see each other.
func uniqueNS() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "t" + hex.EncodeToString(b[:]) + "-"
}

func mustBroker(t *testing.T, c redis.UniversalClient, opts redisqueue.Options) *redisqueue.Broker {
	t.Helper()
	b, err := redisqueue.New(c, opts)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// backend returns the broker constructor for one topology's client: every call gets its own
// namespace.
func backend(c redis.UniversalClient) queuetest.NewBroker {
	return func(t *testing.T) queue.Broker {
		return mustBroker(t, c, redisqueue.Options{Namespace: uniqueNS()})
	}
}

func TestBrokerSuite(t *testing.T) {
	for _, topo := range redistest.Topologies() {
		t.Run(topo.Name, func(t *testing.T) {
			nb := backend(topo.Client(t))
			queuetest.RunBrokerSuite(t, nb, queuetest.Features{})
		})
	}
}

func TestWorkerSuite(t *testing.T) {
	for _, topo := range redistest.Topologies() {
		t.Run(topo.Name, func(t *testing.T) {
			queuetest.RunWorkerSuite(t, backend(topo.Client(t)), queuetest.Features{})
		})
	}
}

func TestProperties(t *testing.T) {
	for _, topo := range redistest.Topologies() {
		t.Run(topo.Name, func(t *testing.T) {
			queuetest.RunProperties(t, backend(topo.Client(t)))
		})
	}
}

// TestKeys_NamesOnStandalone checks that a queue's keys are its name and "<name>:dead"
// verbatim (plus the documented retry, consumers and processing keys).
func TestKeys_NamesOnStandalone(t *testing.T) {
	c := redistest.SharedStandalone(t).Client(t)
	ctx := context.Background()
	b := mustBroker(t, c, redisqueue.Options{})
	q := "jobs"
	m := queue.NewMessage(time.Now(), nil)
	if err := b.Heartbeat(ctx, q, "w1", time.Hour); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := b.Enqueue(ctx, q, queue.NewMessage(time.Now(), nil)); err != nil {
			t.Fatal(err)
		}
	}
	d1, _ := b.Dequeue(ctx, q, "w1", time.Second)
	d2, _ := b.Dequeue(ctx, q, "w1", time.Second)
	d3, err := b.Dequeue(ctx, q, "w1", time.Second)
	if err != nil || d1 == nil || d2 == nil || d3 == nil {
		t.Fatalf("Dequeue: %v", err)
	}
	if err := b.Retry(ctx, d1, d1.Message.NextRetry(), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := b.Bury(ctx, d2, d2.Message); err != nil {
		t.Fatal(err)
	}
	if err := b.Enqueue(ctx, q, m); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"jobs":               "list",
		"jobs:dead":          "list",
		"jobs:retry":         "zset",
		"jobs:consumers":     "zset",
		"jobs:processing:w1": "list",
	}
	all, err := c.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	// Beside them, short-lived markers: one per enqueued job id and one per marked call
	// (dequeue, ack, retry, bury, …), strings that expire.
	var keys []string
	markers := 0
	for _, k := range all {
		if !strings.HasPrefix(k, "jobs:enqueued:") && !strings.HasPrefix(k, "jobs:once:") {
			keys = append(keys, k)
			continue
		}
		markers++
		if typ, ttl := c.Type(ctx, k).Val(), c.PTTL(ctx, k).Val(); typ != "string" || ttl <= 0 || ttl > resend.Window(c) {
			t.Fatalf("marker %s: TYPE %s, PTTL %s; want a string expiring within %s", k, typ, ttl, resend.Window(c))
		}
	}
	if len(keys) != len(want) || markers == 0 {
		t.Fatalf("keys = %v (and %d markers), want %v and markers", keys, markers, want)
	}
	for k, typ := range want {
		if got := c.Type(ctx, k).Val(); got != typ {
			t.Fatalf("TYPE %s = %q, want %q", k, got, typ)
		}
	}
}

// TestKeys_OneSlotOnCluster checks that every key of a queue hashes to one slot, by CLUSTER
// KEYSLOT on the server.
func TestKeys_OneSlotOnCluster(t *testing.T) {
	c := redistest.SharedCluster(t).Client(t)
	ctx := context.Background()
	for _, ns := range []string{"", "prod-"} {
		k := queue.NewKeys(redstate.Prefix(ns, "jobs"), true)
		if k.Pending != ns+"{jobs}" || k.Dead != ns+"{jobs}:dead" {
			t.Fatalf("cluster keys = %+v", k)
		}
		keys := []string{k.Pending, k.Dead, k.Retry, k.Consumers, k.Processing("w1"), k.Processing("host-1-abc"),
			k.Throughput(29000000), k.Enqueued("0123abcd"), k.Once("4567ef")}
		slot := c.ClusterKeySlot(ctx, keys[0]).Val()
		for _, key := range keys[1:] {
			if got := c.ClusterKeySlot(ctx, key).Val(); got != slot {
				t.Fatalf("CLUSTER KEYSLOT %s = %d, want %d (slot of %s)", key, got, slot, keys[0])
			}
		}
	}
}

// TestForeignProducer: a message LPUSHed by a producer outside redstate (or redis-cli) onto a
// queue's list is dequeued and decodes, its own members kept.
func TestForeignProducer(t *testing.T) {
	for _, topo := range redistest.Topologies() {
		t.Run(topo.Name, func(t *testing.T) {
			c := topo.Client(t)
			ctx := context.Background()
			b := mustBroker(t, c, redisqueue.Options{})
			const foreign = `{"Key":12345,"RetryCount":0,"EnqueueTime":"2025-01-15T10:30:00"}`
			key := "jobs"
			if topo.Cluster {
				key = "{jobs}"
			}
			if err := c.LPush(ctx, key, foreign).Err(); err != nil {
				t.Fatal(err)
			}
			if err := b.Heartbeat(ctx, "jobs", "w", time.Minute); err != nil {
				t.Fatal(err)
			}
			d, err := b.Dequeue(ctx, "jobs", "w", time.Second)
			if err != nil || d == nil {
				t.Fatalf("Dequeue = %v, %v", d, err)
			}
			want := time.Date(2025, 1, 15, 10, 30, 0, 0, time.UTC)
			if d.Raw != foreign || d.DecodeErr != nil || string(d.Message.Fields["Key"]) != "12345" || d.Message.RetryCount != 0 || !d.Message.EnqueueTime.Equal(want) {
				t.Fatalf("delivery = %+v", d)
			}
			if err := b.Ack(ctx, d); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestRecoverExpired_ExactlyOnceUnderConcurrentRecoverers: a consumer whose lease expires has
// each in-flight job moved back once, although many recoverers race.
func TestRecoverExpired_ExactlyOnceUnderConcurrentRecoverers(t *testing.T) {
	for _, topo := range redistest.Topologies() {
		t.Run(topo.Name, func(t *testing.T) {
			c := topo.Client(t)
			ns := uniqueNS()
			ctx := context.Background()
			b1 := mustBroker(t, c, redisqueue.Options{Namespace: ns})
			b2 := mustBroker(t, c, redisqueue.Options{Namespace: ns})
			q := queuetest.NewQueueName()
			if err := b1.Heartbeat(ctx, q, "dying", 200*time.Millisecond); err != nil {
				t.Fatal(err)
			}
			ids := queuetest.NewIDs(3)
			for _, id := range ids {
				if err := b1.Enqueue(ctx, q, queuetest.Message(id)); err != nil {
					t.Fatal(err)
				}
			}
			for range ids {
				if d, err := b1.Dequeue(ctx, q, "dying", time.Second); err != nil || d == nil {
					t.Fatalf("Dequeue = %v, %v", d, err)
				}
			}
			time.Sleep(300 * time.Millisecond)
			var mu sync.Mutex
			total := 0
			var wg sync.WaitGroup
			for i := range 8 {
				b := b1
				if i%2 == 1 {
					b = b2
				}
				wg.Go(func() {
					n, err := b.RecoverExpired(ctx, q)
					if err != nil {
						t.Error(err)
					}
					mu.Lock()
					total += n
					mu.Unlock()
				})
			}
			wg.Wait()
			if total != len(ids) {
				t.Fatalf("recovered %d jobs in total, want %d", total, len(ids))
			}
			st, err := b1.Stats(ctx, q)
			if err != nil || st != (queue.Stats{Pending: int64(len(ids))}) {
				t.Fatalf("Stats = %+v, %v", st, err)
			}
			// Dequeue order after recovery is the original order.
			if err := b1.Heartbeat(ctx, q, "alive", time.Minute); err != nil {
				t.Fatal(err)
			}
			for _, id := range ids {
				d, err := b1.Dequeue(ctx, q, "alive", time.Second)
				if err != nil || d == nil || queuetest.IDOf(d.Message) != id {
					t.Fatalf("Dequeue = %+v, %v; want job %d", d, err, id)
				}
			}
		})
	}
}

// TestDequeue_CtxCancelEndsBlock: a Dequeue blocked on an empty queue returns ctx.Err()
// promptly when ctx is cancelled (go-redis itself would wait for the BLMOVE timeout), and a
// job enqueued afterwards is not swallowed by the abandoned BLMOVE.
func TestDequeue_CtxCancelEndsBlock(t *testing.T) {
	c := redistest.SharedStandalone(t).Client(t)
	b := mustBroker(t, c, redisqueue.Options{Namespace: uniqueNS()})
	q := queuetest.NewQueueName()
	ctx := context.Background()
	if err := b.Heartbeat(ctx, q, "w", time.Minute); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	d, err := b.Dequeue(cctx, q, "w", 10*time.Second)
	if !errors.Is(err, context.Canceled) || d != nil {
		t.Fatalf("Dequeue = %v, %v; want context.Canceled", d, err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("Dequeue returned after %v", el)
	}
	if err := b.Enqueue(ctx, q, queue.NewMessage(time.Now(), nil)); err != nil {
		t.Fatal(err)
	}
	if st, _ := b.Stats(ctx, q); st != (queue.Stats{Pending: 1}) {
		t.Fatalf("Stats = %+v; the job must stay pending", st)
	}
	// A fractional timeout is honoured, not rounded up to whole seconds.
	start = time.Now()
	if err := b.Ack(ctx, mustDequeue(t, b, q, "w")); err != nil {
		t.Fatal(err)
	}
	d, err = b.Dequeue(ctx, q, "w", 250*time.Millisecond)
	if el := time.Since(start); err != nil || d != nil || el > 900*time.Millisecond {
		t.Fatalf("Dequeue(250ms) = %v, %v after %v", d, err, el)
	}
}

func mustDequeue(t *testing.T, b *redisqueue.Broker, q, c string) *queue.Delivery {
	t.Helper()
	d, err := b.Dequeue(context.Background(), q, c, time.Second)
	if err != nil || d == nil {
		t.Fatalf("Dequeue = %v, %v", d, err)
	}
	return d
}

// TestRedisDown_Unavailable: with Redis killed every call fails with EUNAVAILABLE; after a
// restart (AOF, fsync always) the data is back and calls work again.
func TestRedisDown_Unavailable(t *testing.T) {
	srv := redistest.StartStandalone(t, redistest.WithAppendOnly(true))
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = c.Close() })
	b := mustBroker(t, c, redisqueue.Options{})
	ctx := context.Background()
	q := "jobs"
	if err := b.Heartbeat(ctx, q, "w", time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := b.Enqueue(ctx, q, queuetest.Message(7)); err != nil {
		t.Fatal(err)
	}
	srv.Kill(t)
	checks := map[string]error{
		"Enqueue":        b.Enqueue(ctx, q, queuetest.Message(8)),
		"Heartbeat":      b.Heartbeat(ctx, q, "w", time.Hour),
		"RecoverExpired": second(b.RecoverExpired(ctx, q)),
		"Stats":          second(b.Stats(ctx, q)),
		"PromoteDue":     second(b.PromoteDue(ctx, q, time.Now(), 10)),
		"HasJob":         second(b.HasJob(ctx, q, queuetest.HasID(7))),
		"Dequeue":        second(b.Dequeue(ctx, q, "w", 100*time.Millisecond)),
	}
	for name, err := range checks {
		if !redstate.IsCode(err, redstate.EUNAVAILABLE) {
			t.Errorf("%s with Redis down: err = %v, want EUNAVAILABLE", name, err)
		}
	}
	srv.Restart(t)
	if st, err := b.Stats(ctx, q); err != nil || st != (queue.Stats{Pending: 1}) {
		t.Fatalf("Stats after restart = %+v, %v", st, err)
	}
	d, err := b.Dequeue(ctx, q, "w", time.Second)
	if err != nil || d == nil || queuetest.IDOf(d.Message) != 7 {
		t.Fatalf("Dequeue after restart = %+v, %v", d, err)
	}
}

func second[T any](_ T, err error) error { return err }

// TestLease_InjectedClock: with Options.Now the lease follows the given clock (as memqueue).
func TestLease_InjectedClock(t *testing.T) {
	c := redistest.SharedStandalone(t).Client(t)
	var mu sync.Mutex
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	b := mustBroker(t, c, redisqueue.Options{Namespace: uniqueNS(), Now: clock})
	ctx := context.Background()
	if err := b.Heartbeat(ctx, "q", "c", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := b.Enqueue(ctx, "q", queue.NewMessage(clock(), nil)); err != nil {
		t.Fatal(err)
	}
	mustDequeue(t, b, "q", "c")
	mu.Lock()
	now = now.Add(59 * time.Second)
	mu.Unlock()
	if n, _ := b.RecoverExpired(ctx, "q"); n != 0 {
		t.Fatalf("recovered %d before expiry", n)
	}
	mu.Lock()
	now = now.Add(time.Second)
	mu.Unlock()
	if n, _ := b.RecoverExpired(ctx, "q"); n != 1 {
		t.Fatalf("recovered %d at expiry, want 1", n)
	}
	if _, err := b.Dequeue(ctx, "q", "c", 100*time.Millisecond); !redstate.IsCode(err, redstate.ECONFLICT) {
		t.Fatalf("Dequeue after expiry = %v, want ECONFLICT", err)
	}
}

func TestNew_RejectsBadInput(t *testing.T) {
	if _, err := redisqueue.New(nil, redisqueue.Options{}); !redstate.IsCode(err, redstate.EINVALID) {
		t.Fatalf("nil client: %v", err)
	}
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}})
	defer ring.Close()
	if _, err := redisqueue.New(ring, redisqueue.Options{}); !redstate.IsCode(err, redstate.EINVALID) {
		t.Fatalf("ring: %v", err)
	}
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	if _, err := redisqueue.New(c, redisqueue.Options{Namespace: "{x}"}); !redstate.IsCode(err, redstate.EINVALID) {
		t.Fatalf("braced namespace: %v", err)
	}
}

// TestHasJob_LongQueues exercises the chunked reads beyond the first snapshot.
func TestHasJob_LongQueues(t *testing.T) {
	c := redistest.SharedStandalone(t).Client(t)
	b := mustBroker(t, c, redisqueue.Options{Namespace: uniqueNS()})
	q := queuetest.NewQueueName()
	ctx := context.Background()
	ids := queuetest.NewIDs(2501)
	for _, id := range ids {
		if err := b.Enqueue(ctx, q, queuetest.Message(id)); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []int64{ids[0], ids[1500], ids[2500]} {
		if ok, err := b.HasJob(ctx, q, queuetest.HasID(id)); err != nil || !ok {
			t.Fatalf("HasJob(%d) = %v, %v", id, ok, err)
		}
	}
	if ok, err := b.HasJob(ctx, q, queuetest.HasID(queuetest.NewIDs(1)[0])); err != nil || ok {
		t.Fatalf("HasJob(absent) = %v, %v", ok, err)
	}
}

func TestThroughputSuite(t *testing.T) {
	for _, topo := range redistest.Topologies() {
		t.Run(topo.Name, func(t *testing.T) {
			c := topo.Client(t)
			queuetest.RunThroughputSuite(t, func(t *testing.T) queue.ThroughputStore {
				return mustBroker(t, c, redisqueue.Options{Namespace: uniqueNS()})
			})
		})
	}
}
