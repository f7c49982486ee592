package memstore

import (
	"container/heap"
	"time"
)

// expiryHeap orders entries by deadline, earliest first. Each entry knows its index, so a write
// that refreshes a TTL moves the entry in O(log n) instead of leaving a stale element behind.
type expiryHeap []*entry

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].expireAt.Before(h[j].expireAt) }
func (h expiryHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIdx = i
	h[j].heapIdx = j
}

// Push implements heap.Interface.
func (h *expiryHeap) Push(x any) {
	e := x.(*entry)
	e.heapIdx = len(*h)
	*h = append(*h, e)
}

// Pop implements heap.Interface.
func (h *expiryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	e.heapIdx = -1
	return e
}

// set inserts e or moves it to its new deadline.
func (h *expiryHeap) set(e *entry) {
	if e.heapIdx >= 0 && e.heapIdx < len(*h) && (*h)[e.heapIdx] == e {
		heap.Fix(h, e.heapIdx)
		return
	}
	heap.Push(h, e)
}

// remove takes e out of the heap if it is there.
func (h *expiryHeap) remove(e *entry) {
	if e.heapIdx >= 0 && e.heapIdx < len(*h) && (*h)[e.heapIdx] == e {
		heap.Remove(h, e.heapIdx)
	}
}

// sweepLoop removes expired entries every interval until Close.
func (s *Store) sweepLoop(interval time.Duration) {
	defer close(s.swept)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
			s.sweep()
		}
	}
}

// sweep removes every entry whose deadline has passed and returns how many it removed.
func (s *Store) sweep() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	n := 0
	for len(s.expiry) > 0 && !now.Before(s.expiry[0].expireAt) {
		s.remove(s.expiry[0])
		n++
	}
	s.order.compact()
	return n
}
