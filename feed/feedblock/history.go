package feedblock

import (
	"context"
	"time"

	"github.com/redstate/redstate/history"
	"github.com/redstate/redstate/queue"
)

// countPublished counts feed.published in the statistics history: every post published or
// announced asks for its fan-out once, through enqueue.
func countPublished(rec *history.Recorder, enqueue func(context.Context, int64) error) func(context.Context, int64) error {
	if rec == nil {
		return enqueue
	}
	return func(ctx context.Context, post int64) error {
		rec.Add(history.FeedPublished, 1)
		return enqueue(ctx, post)
	}
}

// deliveryLag sets feed.delivery_lag when a fan-out job is done: the seconds since its
// message's EnqueueTime (the publication, to the second).
func deliveryLag(rec *history.Recorder, h queue.Handler) queue.Handler {
	if rec == nil {
		return h
	}
	return func(ctx context.Context, d *queue.Delivery) error {
		err := h(ctx, d)
		if err == nil && !d.Message.EnqueueTime.IsZero() {
			rec.Set(history.FeedDeliveryLag, max(0, time.Since(d.Message.EnqueueTime).Seconds()))
		}
		return err
	}
}

// sampleBacklog sets feed.fanout_backlog at every history flush: the fan-out jobs waiting or
// running (pending, scheduled, retrying, running), read from the shared queue.
func sampleBacklog(rec *history.Recorder, broker queue.Broker, name string) {
	rec.AddSampler(func(ctx context.Context, r *history.Recorder) {
		st, err := broker.Stats(ctx, name)
		if err != nil {
			return
		}
		r.Set(history.FeedFanoutBacklog, float64(st.Pending+st.Scheduled+st.Retrying+st.Running))
	})
}
