// Package queuetest is the conformance suite of the queue block: every backend (memory, Redis
// standalone, Redis Cluster) runs RunBrokerSuite from its tests, and RunWorkerSuite and
// RunProperties on top, so that all backends keep the contracts documented on queue.Broker and
// the queue's correctness properties.
//
// Requirements on a backend under test:
//
//   - Subtests run in parallel and each uses its own random queue names and job ids, so one
//     backend instance (one Redis database) may serve them all; never FLUSHALL.
//   - Leases of a few hundred milliseconds must be honoured to within about a second: the suite
//     waits for lease expiry by polling RecoverExpired with a deadline, never by fixed sleeps.
package queuetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/big"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
)

// Features declares what a backend guarantees beyond the contract. Nothing is optional yet;
// the struct keeps the suites' signatures stable when something becomes optional.
type Features struct{}

// NewBroker returns a Broker under test. It may return the same instance every time (the suite
// isolates by queue name) and should register cleanup with t.Cleanup.
type NewBroker func(t *testing.T) queue.Broker

// waitFor bounds every poll for a condition.
const waitFor = 10 * time.Second

// longLease is the lease of consumers that must not expire during a test.
const longLease = time.Hour

// NamedTest is one subtest of a suite.
type NamedTest struct {
	// Name is the subtest's name; Run is its body.
	Name string
	Run  func(t *testing.T)
}

// RunGroups runs named groups of tests, each group and test in parallel (suites built on the
// queue's, such as the report block's, use it too).
func RunGroups(t *testing.T, groups map[string][]NamedTest) {
	for name, tests := range groups {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range tests {
				t.Run(tc.Name, func(t *testing.T) {
					t.Parallel()
					tc.Run(t)
				})
			}
		})
	}
}

// NewQueueName returns a random, valid queue name for one test.
func NewQueueName() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "queuetest:" + hex.EncodeToString(b[:])
}

// idBase hands out disjoint id ranges, starting at a random point so that runs sharing
// a Redis database do not collide.
var idBase atomic.Int64

func init() {
	n, _ := rand.Int(rand.Reader, big.NewInt(1<<50))
	idBase.Store(n.Int64() + 1)
}

// NewIDs returns n fresh ids, unique within the process and very likely across
// processes.
func NewIDs(n int) []int64 {
	start := idBase.Add(int64(n)) - int64(n)
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = start + int64(i)
	}
	return ids
}

// ctxT returns a context canceled when the test ends or after waitFor.
func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	t.Cleanup(cancel)
	return ctx
}

// mustLease registers consumer with a long lease.
func mustLease(t *testing.T, b queue.Broker, q, consumer string) {
	t.Helper()
	if err := b.Heartbeat(context.Background(), q, consumer, longLease); err != nil {
		t.Fatalf("Heartbeat: %v", err)
	}
}

// Message returns a new message whose payload is id (a JSON number): the suites tell jobs
// apart by it.
func Message(id int64) queue.Message {
	return queue.NewMessage(time.Now(), json.RawMessage(strconv.FormatInt(id, 10)))
}

// IDOf returns the id Message put in m's payload, or 0 if it holds none.
func IDOf(m queue.Message) int64 {
	var id int64
	if json.Unmarshal(m.Payload, &id) != nil {
		return 0
	}
	return id
}

// HasID returns the Broker.HasJob predicate matching the messages carrying id (Message).
func HasID(id int64) func(queue.Message) bool {
	return func(m queue.Message) bool { return IDOf(m) == id }
}

// mustEnqueue enqueues a fresh message for id (Message) and returns it.
func mustEnqueue(t *testing.T, b queue.Broker, q string, id int64) queue.Message {
	t.Helper()
	m := Message(id)
	if err := b.Enqueue(context.Background(), q, m); err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	return m
}

// mustDequeue dequeues one job, failing the test if none arrives within a second.
func mustDequeue(t *testing.T, b queue.Broker, q, consumer string) *queue.Delivery {
	t.Helper()
	d, err := b.Dequeue(context.Background(), q, consumer, time.Second)
	if err != nil {
		t.Fatalf("Dequeue: %v", err)
	}
	if d == nil {
		t.Fatalf("Dequeue: no job within 1s")
	}
	return d
}

// mustStats returns the queue's stats.
func mustStats(t *testing.T, b queue.Broker, q string) queue.Stats {
	t.Helper()
	st, err := b.Stats(context.Background(), q)
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	return st
}

// wantStats fails unless the queue's stats equal want.
func wantStats(t *testing.T, b queue.Broker, q string, want queue.Stats) {
	t.Helper()
	if got := mustStats(t, b, q); got != want {
		t.Fatalf("Stats = %+v, want %+v", got, want)
	}
}

// wantCode fails unless err carries code.
func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if !redstate.IsCode(err, code) {
		t.Fatalf("err = %v, want code %q", err, code)
	}
}

// eventually polls cond every 10ms until it holds or waitFor passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// errInjected is the failure of the fault-injecting wrappers.
var errInjected = redstate.Wrap(redstate.EUNAVAILABLE, errors.New("injected failure"), "injected")
