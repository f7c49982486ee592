package redisqueue_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/queuetest"
	"github.com/redstate/redstate/queue/redisqueue"
	"github.com/redstate/redstate/redistest"
)

// Helper-process protocol of TestPool_SIGKILLedConsumerJobsRedelivered: the parent re-executes
// this test binary with -test.run=^TestHelperPoolConsumer$ and these variables; without
// poolAddrEnv the helper test does nothing.
const (
	poolAddrEnv   = "REDSTATE_POOL_HELPER_ADDR"   // redis-server address
	poolNSEnv     = "REDSTATE_POOL_HELPER_NS"     // key namespace
	poolQueuesEnv = "REDSTATE_POOL_HELPER_QUEUES" // the pool's two queues, comma separated
	poolStartsEnv = "REDSTATE_POOL_HELPER_STARTS" // file the helper appends "<queue> <id>" to per started job

	poolHelperLease = time.Second
)

// poolQueues returns a pool of the two queues (weights 2 and 1, two handlers, prefetch 2, a
// short lease) running h.
func poolQueues(t *testing.T, b queue.Broker, queues []string, h queue.Handler) *queue.Worker {
	t.Helper()
	var qs []queue.PoolQueue
	for i, q := range queues {
		s := queuetest.FastConfig(q)
		s.ShutdownTimeout, s.Lease, s.Logger = 0, poolHelperLease, nil
		qs = append(qs, queue.PoolQueue{Settings: s, Handler: h, Weight: 2 - i})
	}
	w, err := queue.NewPool(b, queue.PoolSettings{Concurrency: 2, Prefetch: 2, BlockTimeout: 100 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, qs...)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestPool_SIGKILLedConsumerJobsRedelivered: a process runs a pool of two queues whose handlers
// never finish; once both handlers run (and more jobs are prefetched) it is SIGKILLed. A new
// pool in this process then runs every job of both queues: those the dead consumer held come
// back when its lease on their queue lapses, each on its own queue. Nothing is lost.
func TestPool_SIGKILLedConsumerJobsRedelivered(t *testing.T) {
	const perQueue = 5
	srv := redistest.StartStandalone(t)
	ns := fmt.Sprintf("poolkill-%d:", time.Now().UnixNano())
	b := mustBroker(t, srv.Client(t), redisqueue.Options{Namespace: ns})
	queues := []string{queuetest.NewQueueName(), queuetest.NewQueueName()}
	want := map[string]string{} // job id → queue
	for _, q := range queues {
		for _, id := range queuetest.NewIDs(perQueue) {
			m := queuetest.Message(id)
			if err := b.Enqueue(context.Background(), q, m); err != nil {
				t.Fatal(err)
			}
			want[fmt.Sprint(id)] = q
		}
	}

	starts := filepath.Join(t.TempDir(), "starts")
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestHelperPoolConsumer$", "-test.count=1")
	cmd.Env = append(os.Environ(), poolAddrEnv+"="+srv.Addr, poolNSEnv+"="+ns, poolQueuesEnv+"="+strings.Join(queues, ","), poolStartsEnv+"="+starts)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var started []string
	deadline := time.Now().Add(30 * time.Second)
	for len(started) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the helper pool started %d jobs, want 2", len(started))
		}
		time.Sleep(10 * time.Millisecond)
		data, _ := os.ReadFile(starts)
		started = strings.Fields(string(data))
		started = started[:len(started)/2*2]
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var exit *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &exit) {
		t.Fatalf("helper: %v, want killed", err)
	}
	held := 0
	for _, q := range queues {
		st, err := b.Stats(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		held += int(st.Running)
	}
	if held < 2 {
		t.Fatalf("the killed pool held %d jobs in flight, want at least its 2 running ones", held)
	}

	var mu sync.Mutex
	handled := map[string]string{}
	w := poolQueues(t, b, queues, func(_ context.Context, d *queue.Delivery) error {
		mu.Lock()
		handled[string(d.Message.Payload)] = d.Queue
		mu.Unlock()
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	defer func() { cancel(); <-done }()
	deadline = time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := len(handled)
		mu.Unlock()
		if n == len(want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("handled %d of %d jobs after the SIGKILL (%d were in flight at the dead consumer)", n, len(want), held)
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	for id, q := range want {
		if handled[id] != q {
			t.Errorf("job %s of %s: handled on %q", id, q, handled[id])
		}
	}
	for i := 0; i < len(started); i += 2 {
		if q, id := started[i], started[i+1]; handled[id] != q {
			t.Errorf("job %s the killed pool ran on %s was not redelivered there", id, q)
		}
	}
	t.Logf("%d jobs in flight at the SIGKILLed pool (%d running); all %d jobs of both queues ran", held, len(started)/2, len(want))
}

// TestHelperPoolConsumer is the body of the pool process of
// TestPool_SIGKILLedConsumerJobsRedelivered; run directly (without its variables) it does
// nothing. Its handlers record each start and never finish; it runs until killed (at most two
// minutes, should its parent vanish).
func TestHelperPoolConsumer(t *testing.T) {
	addr := os.Getenv(poolAddrEnv)
	if addr == "" {
		return
	}
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	b := mustBroker(t, c, redisqueue.Options{Namespace: os.Getenv(poolNSEnv)})
	f, err := os.OpenFile(os.Getenv(poolStartsEnv), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := poolQueues(t, b, strings.Split(os.Getenv(poolQueuesEnv), ","), func(ctx context.Context, d *queue.Delivery) error {
		_, _ = fmt.Fprintf(f, "%s %s\n", d.Queue, d.Message.Payload) // one write(2): unbuffered
		<-ctx.Done()
		return ctx.Err()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_ = w.Run(ctx)
}
