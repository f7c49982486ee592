package memqueue

import (
	"context"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
)

// DeadLetters implements queue.Broker.
func (b *Broker) DeadLetters(_ context.Context, name string, start, count int) ([]queue.DeadLetter, error) {
	if err := queue.ValidateQueueName(name); err != nil {
		return nil, err
	}
	if start < 0 || count < 1 || count > queue.MaxListCount {
		return nil, redstate.Errorf(redstate.EINVALID, "start must be >= 0 and count 1..%d", queue.MaxListCount)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.q(name)
	out := []queue.DeadLetter{}
	for i := start; i < len(s.dead) && i < start+count; i++ {
		out = append(out, queue.NewDeadLetter(s.dead[i]))
	}
	return out, nil
}

// RequeueDead implements queue.Broker.
func (b *Broker) RequeueDead(_ context.Context, name, raw string) error {
	if err := queue.ValidateQueueName(name); err != nil {
		return err
	}
	if raw == "" {
		return redstate.Errorf(redstate.EINVALID, "empty message")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.q(name)
	for i, d := range s.dead {
		if d == raw {
			s.dead = append(s.dead[:i:i], s.dead[i+1:]...)
			s.push(raw)
			b.movePending(s, []string{raw})
			return nil
		}
	}
	return redstate.Errorf(redstate.ENOTFOUND, "no such dead letter on queue %q", name)
}

// RequeueAllDead implements queue.Broker.
func (b *Broker) RequeueAllDead(_ context.Context, name string) (int, error) {
	if err := queue.ValidateQueueName(name); err != nil {
		return 0, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.q(name)
	n := len(s.dead)
	raws := make([]string, n)
	for i, raw := range s.dead {
		raws[n-1-i] = raw // oldest first
	}
	s.dead = nil
	s.push(raws...)
	b.movePending(s, raws)
	return n, nil
}

// PurgeDead implements queue.Broker.
func (b *Broker) PurgeDead(_ context.Context, name string) (int, error) {
	if err := queue.ValidateQueueName(name); err != nil {
		return 0, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.q(name)
	n := len(s.dead)
	s.dead = nil
	return n, nil
}
