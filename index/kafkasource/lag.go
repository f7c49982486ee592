package kafkasource

import (
	"maps"
	"sync"
)

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// lagTable holds the lag of each partition this instance owns.
type lagTable struct {
	mu sync.Mutex
	m  map[TopicPartition]int64
}

func (l *lagTable) set(tp TopicPartition, lag int64) {
	l.mu.Lock()
	l.m[tp] = max(lag, 0)
	l.mu.Unlock()
}

// drop forgets partitions no longer owned.
func (l *lagTable) drop(parts map[string][]int32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for topic, ps := range parts {
		for _, p := range ps {
			delete(l.m, TopicPartition{Topic: topic, Partition: p})
		}
	}
}

func (l *lagTable) snapshot() map[TopicPartition]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.m)
}
