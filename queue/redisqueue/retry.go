package redisqueue

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
)

// Retry implements queue.Broker: one script, LREM processing:<consumer> -1 raw then ZADD retry
// <due ms> <next>.
func (b *Broker) Retry(ctx context.Context, d *queue.Delivery, next queue.Message, due time.Time) error {
	if err := queue.CheckDelivery(d); err != nil {
		return err
	}
	raw, err := queue.EncodeMessage(next)
	if err != nil {
		return err
	}
	k := b.keys(d.Queue)
	if queue.HasRecord(d.Raw) {
		return b.settleJob(ctx, d, queue.StateRetrying, k.Retry, string(raw), due.UnixMilli(), next.LastError)
	}
	m := b.marker(d.Queue)
	n, err := retryScript.Run(ctx, b.client, m.Keys(k.Processing(d.ConsumerID), k.Retry), m.Args(d.Raw, due.UnixMilli(), string(raw))...).Int()
	if err != nil {
		return mapErr(err, "retry")
	}
	if n == 0 {
		return notInFlight(d)
	}
	return nil
}

// PromoteDue implements queue.Broker: one script moving up to limit entries with due <= now
// (in Unix ms), earliest first, from the retry and scheduled ZSETs to the tail of the pending
// list (records of moved jobs turn pending).
func (b *Broker) PromoteDue(ctx context.Context, name string, now time.Time, limit int) (int, error) {
	if err := queue.ValidateQueueName(name); err != nil {
		return 0, err
	}
	if limit <= 0 {
		return 0, redstate.Errorf(redstate.EINVALID, "limit must be > 0")
	}
	k := b.keys(name)
	m := b.marker(name)
	n, err := promoteJobsScript.Run(ctx, b.client, m.Keys(k.Retry, k.Scheduled, k.Pending), m.Args(now.UnixMilli(), limit, k.JobPrefix, k.JobIndexPrefix)...).Int()
	if err != nil {
		return 0, mapErr(err, "promote due")
	}
	return n, nil
}

// NextDue implements queue.DueReader: the lowest score of the retry and scheduled ZSETs, read
// in one pipeline (ZRANGE … 0 0 WITHSCORES each).
func (b *Broker) NextDue(ctx context.Context, name string) (time.Time, bool, error) {
	if err := queue.ValidateQueueName(name); err != nil {
		return time.Time{}, false, err
	}
	k := b.keys(name)
	pipe := b.client.Pipeline()
	heads := []*redis.ZSliceCmd{pipe.ZRangeWithScores(ctx, k.Retry, 0, 0), pipe.ZRangeWithScores(ctx, k.Scheduled, 0, 0)}
	if _, err := pipe.Exec(ctx); err != nil {
		return time.Time{}, false, mapErr(err, "next due")
	}
	var next time.Time
	found := false
	for _, h := range heads {
		for _, z := range h.Val() {
			if t := time.UnixMilli(int64(z.Score)); !found || t.Before(next) {
				next, found = t, true
			}
		}
	}
	return next, found, nil
}
