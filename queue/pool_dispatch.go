package queue

import (
	"context"
	"slices"
	"time"
)

// probeTimeout is the DequeueBatch timeout of a pool asking a queue for jobs without waiting:
// it has run out by the time the broker finds the queue empty, so the call answers at once.
const probeTimeout = time.Nanosecond

// fill takes up to free jobs from the worker's queues in one round, passing each queue's batch
// to take, and returns how long to wait before the next round when every queue is failing (0
// otherwise).
//
// The round asks each queue at most once (one DequeueBatch per queue: on Redis Cluster the
// queues' keys live in different hash slots). It assigns the free slots to the queues that are
// not failing (assign: a strict pool gives them all to the highest priority, a weighted one
// shares them by weight) and asks the queue with the most slots first; what a queue could not
// fill goes to the queues not yet asked, so an empty queue never holds back the others. A
// Worker of one queue blocks on it for its BlockTimeout. A pool that found every queue empty
// blocks on its first queue that is not failing for PoolSettings.BlockTimeout: no polling, a job
// arriving there is taken at once, and the next round sees the other queues again.
func (w *Worker) fill(ctx context.Context, free int, take func(*lane, []*Delivery)) time.Duration {
	open := w.open(time.Now())
	if len(open) == 0 {
		return w.untilOpen()
	}
	timeout := probeTimeout
	if len(w.lanes) == 1 {
		timeout = w.pool.BlockTimeout
	}
	counts := make([]int, len(w.lanes))
	w.assign(free, open, counts)
	took := 0
	for free > 0 && len(open) > 0 {
		next := 0 // the open queue with the most slots; the first of equals
		for j, i := range open {
			if counts[i] > counts[open[next]] {
				next = j
			}
		}
		i := open[next]
		if counts[i] == 0 {
			break
		}
		open = slices.Delete(open, next, next+1)
		ds := w.lanes[i].dequeue(ctx, counts[i], timeout)
		if len(ds) > 0 {
			take(w.lanes[i], ds)
			took += len(ds)
			free -= len(ds)
		}
		if short := min(counts[i]-len(ds), free); short > 0 && len(open) > 0 {
			w.assign(short, open, counts)
		}
	}
	if took > 0 || len(w.lanes) == 1 || ctx.Err() != nil {
		return 0
	}
	open = w.open(time.Now())
	if len(open) == 0 {
		return w.untilOpen()
	}
	l := w.lanes[open[0]]
	if ds := l.dequeue(ctx, free, w.pool.BlockTimeout); len(ds) > 0 {
		take(l, ds)
	}
	return 0
}

// open returns the indexes of the queues not failing at now, in the worker's order.
func (w *Worker) open(now time.Time) []int {
	open := make([]int, 0, len(w.lanes))
	for i, l := range w.lanes {
		if !l.failedUntil.After(now) {
			open = append(open, i)
		}
	}
	return open
}

// untilOpen returns how long until the first failing queue may be asked again (at least 1ms).
func (w *Worker) untilOpen() time.Duration {
	next := w.lanes[0].failedUntil
	for _, l := range w.lanes[1:] {
		if l.failedUntil.Before(next) {
			next = l.failedUntil
		}
	}
	return max(time.Until(next), time.Millisecond)
}

// assign adds n slots to counts among the open queues (indexes in the worker's order). A
// strict pool gives them all to the first, the highest priority. A weighted pool picks slot by
// slot with smooth weighted round robin: each pick adds every open queue's weight to its credit,
// takes the queue with the most credit (the first of equals) and charges it the open queues'
// total weight. Over any run of picks among the same queues each queue's count is within one
// of its weight's share, and the shares interleave (weights 2 and 1 pick A, B, A, …), with no
// randomness. A queue left out of a round (failing, or found empty) keeps its credit.
func (w *Worker) assign(n int, open []int, counts []int) {
	if w.pool.Strict {
		counts[open[0]] += n
		return
	}
	total := 0
	for _, i := range open {
		total += w.lanes[i].weight
	}
	for range n {
		best := open[0]
		for _, i := range open {
			w.credit[i] += w.lanes[i].weight
			if w.credit[i] > w.credit[best] {
				best = i
			}
		}
		w.credit[best] -= total
		counts[best]++
	}
}
