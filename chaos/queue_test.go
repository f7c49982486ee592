//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/redisqueue"
)

// Queue load: queueProducers enqueue jobs to each of two queues, a live one and a backlog
// one. On the live queue queueWorkers dequeue, run (queueWork) and ack them, renewing a
// queueLease every queueLease/3, and a janitor recovers expired leases. The backlog queue's
// workers start only when the producers stop (workers that are down or behind), so its jobs
// sit in Redis across the fault: a job lost by the failover shows there, where on the live
// queue it has usually run before the fault.
const (
	queueProducers = 2
	queueWorkers   = 3
	queuePause     = 5 * time.Millisecond
	queueWork      = 2 * time.Millisecond
	queueLease     = 3 * time.Second
	// queueDrain bounds how long the workers may take to finish the phase's jobs once the
	// producers stop (lease expiry and recovery included).
	queueDrain = 30 * time.Second
)

// queueBlock is the queue under load: the queues are named after the run's tags (their keys
// carry the name as hash tag), so the faults hit their shard.
var queueBlock = block{name: "queue", setup: func(t *testing.T, r *run) func(int) load {
	broker, err := redisqueue.New(r.rdb, redisqueue.Options{})
	if err != nil {
		t.Fatalf("redisqueue.New: %v", err)
	}
	return func(phase int) load {
		return &queueLoads{live: newQueueLoad(broker, r.tags[0], phase), backlog: newQueueLoad(broker, r.tags[1], phase)}
	}
}}

// queueLoads are the live and the backlog queue of one phase.
type queueLoads struct {
	live, backlog *queueLoad
	// work and workers are the phase's worker context and group, kept for the backlog's
	// workers, which start in settle.
	work    context.Context
	workers *sync.WaitGroup
}

// start runs the producers of both queues on produce and the live queue's workers and
// janitor on work.
func (q *queueLoads) start(produce, work context.Context, producers, workers *sync.WaitGroup) {
	q.work, q.workers = work, workers
	q.live.produce(produce, producers)
	q.backlog.produce(produce, producers)
	q.live.work(work, workers)
}

// settle starts the backlog's workers and waits until both queues ran every acknowledged job.
func (q *queueLoads) settle(*testing.T) {
	q.backlog.work(q.work, q.workers)
	q.live.drain()
	q.backlog.drain()
}

// rows reports the jobs of both queues.
func (q *queueLoads) rows(t *testing.T, faultAt time.Time) []row {
	return []row{q.live.row(t, "queue job", faultAt), q.backlog.row(t, "queue backlog job", faultAt)}
}

// queueLoad is the queue load model of one phase: the jobs whose Enqueue was acknowledged,
// how often each job ran, and how often a job ran on two workers at once.
type queueLoad struct {
	broker *redisqueue.Broker
	name   string
	phase  int
	log    opLog

	mu         sync.Mutex
	acked      map[string]bool
	runs       map[string]int
	running    map[string]int
	concurrent int
}

func newQueueLoad(b *redisqueue.Broker, name string, phase int) *queueLoad {
	return &queueLoad{broker: b, name: name, phase: phase, acked: map[string]bool{}, runs: map[string]int{}, running: map[string]int{}}
}

// row reports the queue's jobs as block.
func (q *queueLoad) row(t *testing.T, block string, faultAt time.Time) row {
	r := newRow(block)
	r.acked, r.failed = q.log.counts()
	r.lost, r.dups, r.concurrent = q.result()
	r.recovery = recovered(t, &q.log, faultAt, r.block)
	return r
}

// produce enqueues until ctx ends.
func (q *queueLoad) produce(ctx context.Context, wg *sync.WaitGroup) {
	for p := 0; p < queueProducers; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				msg := queue.NewMessage(time.Now(), nil)
				opCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
				err := q.broker.Enqueue(opCtx, q.name, msg)
				cancel()
				if ctx.Err() != nil {
					return // outcome unknown
				}
				q.log.add(err)
				if err == nil {
					q.mu.Lock()
					q.acked[msg.JobID] = true
					q.mu.Unlock()
				}
				time.Sleep(queuePause)
			}
		}()
	}
}

// work runs the workers and the janitor until ctx ends.
func (q *queueLoad) work(ctx context.Context, wg *sync.WaitGroup) {
	for w := 0; w < queueWorkers; w++ {
		consumer := fmt.Sprintf("chaos-%s-p%d-w%d", q.name, q.phase, w)
		wg.Add(2)
		go func() {
			defer wg.Done()
			q.heartbeat(ctx, consumer)
		}()
		go func() {
			defer wg.Done()
			q.consume(ctx, consumer)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			opCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
			_, _ = q.broker.RecoverExpired(opCtx, q.name) // failures are retried on the next tick
			cancel()
			sleepCtx(ctx, time.Second)
		}
	}()
}

// heartbeat renews consumer's lease every queueLease/3 until ctx ends.
func (q *queueLoad) heartbeat(ctx context.Context, consumer string) {
	for ctx.Err() == nil {
		opCtx, cancel := context.WithTimeout(ctx, time.Second)
		_ = q.broker.Heartbeat(opCtx, q.name, consumer, queueLease) // a missed beat is retried
		cancel()
		sleepCtx(ctx, queueLease/3)
	}
}

// consume dequeues, runs and acks jobs as consumer until ctx ends.
func (q *queueLoad) consume(ctx context.Context, consumer string) {
	for ctx.Err() == nil {
		opCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
		d, err := q.broker.Dequeue(opCtx, q.name, consumer, 500*time.Millisecond)
		cancel()
		if err != nil {
			// Unavailable, or no live lease after a failover lost it: renew and retry.
			hbCtx, cancel := context.WithTimeout(ctx, time.Second)
			_ = q.broker.Heartbeat(hbCtx, q.name, consumer, queueLease)
			cancel()
			sleepCtx(ctx, 100*time.Millisecond)
			continue
		}
		if d == nil {
			continue
		}
		id := d.Message.JobID
		q.mu.Lock()
		q.runs[id]++
		q.running[id]++
		if q.running[id] > 1 {
			q.concurrent++
		}
		q.mu.Unlock()
		time.Sleep(queueWork)
		q.mu.Lock()
		q.running[id]--
		q.mu.Unlock()
		ackCtx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		_ = q.broker.Ack(ackCtx, d) // an unacked job is recovered after the lease and runs again
		cancel()
	}
}

// unprocessed returns how many acknowledged jobs have not run yet.
func (q *queueLoad) unprocessed() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for id := range q.acked {
		if q.runs[id] == 0 {
			n++
		}
	}
	return n
}

// drain waits until every acknowledged job ran or queueDrain passed.
func (q *queueLoad) drain() {
	deadline := time.Now().Add(queueDrain)
	for q.unprocessed() > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
}

// result returns the acknowledged jobs that never ran (lost), the acknowledged jobs that ran
// more than once (duplicates, allowed by at-least-once) and the runs that overlapped another
// run of the same job (concurrent).
func (q *queueLoad) result() (lost, duplicates, concurrent int) {
	lost = q.unprocessed()
	q.mu.Lock()
	defer q.mu.Unlock()
	for id := range q.acked {
		if q.runs[id] > 1 {
			duplicates++
		}
	}
	return lost, duplicates, q.concurrent
}

// sleepCtx sleeps for d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
