package memqueue

import (
	"context"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
)

// take removes d from its consumer's in-flight entries. b.mu must be held. Errors: ECONFLICT.
func (b *Broker) take(d *queue.Delivery) error {
	s := b.q(d.Queue)
	list := s.inflight[d.ConsumerID]
	for i, raw := range list {
		if raw == d.Raw {
			list = append(list[:i:i], list[i+1:]...)
			if len(list) == 0 {
				delete(s.inflight, d.ConsumerID)
			} else {
				s.inflight[d.ConsumerID] = list
			}
			return nil
		}
	}
	return redstate.Errorf(redstate.ECONFLICT, "job is no longer in flight at consumer %q (its lease expired and it was recovered)", d.ConsumerID)
}

// Ack implements queue.Broker.
func (b *Broker) Ack(_ context.Context, d *queue.Delivery) error {
	if err := queue.CheckDelivery(d); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.take(d); err != nil {
		return err
	}
	b.settled(d, queue.StateDone, "", "")
	return nil
}

// AckBatch implements queue.Broker.
func (b *Broker) AckBatch(_ context.Context, ds []*queue.Delivery) []error {
	errs := make([]error, len(ds))
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, d := range ds {
		if errs[i] = queue.CheckDelivery(d); errs[i] == nil {
			if errs[i] = b.take(d); errs[i] == nil {
				b.settled(d, queue.StateDone, "", "")
			}
		}
	}
	return errs
}

// Release implements queue.Broker.
func (b *Broker) Release(_ context.Context, ds []*queue.Delivery) (int, error) {
	if err := queue.CheckReleaseBatch(ds); err != nil {
		return 0, err
	}
	if len(ds) == 0 {
		return 0, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	back := make([]string, 0, len(ds))
	for _, d := range ds {
		if b.take(d) == nil {
			back = append(back, d.Raw)
		}
	}
	s := b.q(ds[0].Queue)
	s.pushFront(back)
	b.movePending(s, back)
	return len(back), nil
}

// Retry implements queue.Broker.
func (b *Broker) Retry(_ context.Context, d *queue.Delivery, next queue.Message, due time.Time) error {
	if err := queue.CheckDelivery(d); err != nil {
		return err
	}
	raw, err := queue.EncodeMessage(next)
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.take(d); err != nil {
		return err
	}
	b.q(d.Queue).retry[string(raw)] = due
	b.settled(d, queue.StateRetrying, string(raw), next.LastError)
	return nil
}

// Bury implements queue.Broker.
func (b *Broker) Bury(_ context.Context, d *queue.Delivery, msg queue.Message) error {
	if err := queue.CheckDelivery(d); err != nil {
		return err
	}
	raw, err := queue.EncodeMessage(msg)
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.take(d); err != nil {
		return err
	}
	s := b.q(d.Queue)
	s.dead = append([]string{string(raw)}, s.dead...)
	b.settled(d, queue.StateDead, string(raw), msg.LastError)
	return nil
}

// Heartbeat implements queue.Broker.
func (b *Broker) Heartbeat(_ context.Context, name, consumerID string, lease time.Duration) error {
	if err := queue.ValidateNames(name, consumerID); err != nil {
		return err
	}
	if lease <= 0 {
		return redstate.Errorf(redstate.EINVALID, "lease must be > 0")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.q(name).leases[consumerID] = b.now().Add(lease)
	return nil
}

// RecoverExpired implements queue.Broker.
func (b *Broker) RecoverExpired(_ context.Context, name string) (int, error) {
	if err := queue.ValidateQueueName(name); err != nil {
		return 0, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.q(name)
	now := b.now()
	var back []string
	for _, c := range sortedKeys(s.inflight) {
		if deadline, ok := s.leases[c]; ok && now.Before(deadline) {
			continue
		}
		back = append(back, s.inflight[c]...)
		delete(s.inflight, c)
		delete(s.leases, c)
	}
	for c, deadline := range s.leases {
		if !now.Before(deadline) {
			delete(s.leases, c)
		}
	}
	s.pushFront(back)
	b.movePending(s, back)
	return len(back), nil
}

// InFlight implements queue.Broker.
func (b *Broker) InFlight(_ context.Context, name, consumerID string) ([]*queue.Delivery, error) {
	if err := queue.ValidateQueueName(name); err != nil {
		return nil, err
	}
	if err := queue.ValidateConsumerID(consumerID); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	list := b.q(name).inflight[consumerID]
	out := make([]*queue.Delivery, 0, min(len(list), queue.MaxInFlightListed))
	for _, raw := range list[:min(len(list), queue.MaxInFlightListed)] {
		out = append(out, queue.NewDelivery(name, consumerID, raw))
	}
	return out, nil
}
