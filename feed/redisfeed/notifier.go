package redisfeed

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/feed"
	"github.com/redstate/redstate/internal/rediserr"
)

// Notifier is the cross-instance feed.Notifier: Notify publishes the user ids on one channel
// ("<prefix>feed:events", one message per call, so a fan-out batch costs one PUBLISH), and Run
// subscribes to it and signals this process's subscribers (a feed.LocalNotifier). After a
// (re)subscription every local subscriber is signalled, since messages may have been missed;
// go-redis resubscribes by itself after a dropped connection, and the SSE handler re-reads
// counts at every heartbeat, which bounds what a message lost then can delay.
type Notifier struct {
	client  redis.UniversalClient
	channel string
	local   *feed.LocalNotifier
	log     *slog.Logger
}

var _ feed.Notifier = (*Notifier)(nil)

// NewNotifier returns a Notifier on client publishing on the channel of p (feed.Keys.Events);
// call Run to receive other instances' notifications.
func NewNotifier(client redis.UniversalClient, p redstate.KeyPrefix, log *slog.Logger) *Notifier {
	if log == nil {
		log = slog.Default()
	}
	return &Notifier{client: client, channel: feed.NewKeys(p, false).Events(), local: feed.NewLocalNotifier(), log: log}
}

// Notify implements feed.Notifier.
func (n *Notifier) Notify(ctx context.Context, users []int64) error {
	if len(users) == 0 {
		return nil
	}
	msg, _ := json.Marshal(users)
	return rediserr.Map(n.client.Publish(ctx, n.channel, msg).Err(), "feed notify")
}

// Subscribe implements feed.Notifier.
func (n *Notifier) Subscribe(user int64) (<-chan struct{}, func()) { return n.local.Subscribe(user) }

// Run receives notifications until ctx ends and returns nil.
func (n *Notifier) Run(ctx context.Context) error {
	for ctx.Err() == nil {
		sub := n.client.Subscribe(ctx, n.channel)
		if _, err := sub.Receive(ctx); err != nil {
			_ = sub.Close()
			if ctx.Err() == nil {
				n.log.Warn("feed notifications: subscribe failed; retrying", "err", err)
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
			continue
		}
		n.local.NotifyAll() // anything published while we were not subscribed
		stop := context.AfterFunc(ctx, func() { _ = sub.Close() })
		ch := sub.Channel()
		for msg := range ch {
			var users []int64
			if json.Unmarshal([]byte(msg.Payload), &users) == nil {
				_ = n.local.Notify(ctx, users)
			}
		}
		stop()
		_ = sub.Close()
	}
	return nil
}
