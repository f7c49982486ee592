package redisconn

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
)

// Prober pings Redis for a circuit breaker's probe (resilience.WithProbe) while the breaker is
// open, so that its failed pings do not count against the block client's connection pool.
//
// go-redis's pool counts failed dials and, once PoolSize of them have failed, refuses to dial
// at all until a background dial, retried once a second, succeeds. A probe pinging through that
// pool every few hundred milliseconds during an outage would fill the count itself, and the
// client would then reach the new master of a failover up to a second after the sentinels name
// it. The Prober first pings through a client of its own that shares the block client's
// settings (on Sentinel its resolution of the current master) and is replaced after every
// failed ping, so each ping of an outage dials afresh, from a pool that never refuses, to the
// master named at that moment; only when that ping answers does it ping through the block's
// client, whose pool then dials the master that answered (or, if other calls filled its count,
// still refuses until its background dial succeeds: the breaker then stays open rather than
// let trial calls fail). On Cluster it pings every master through the cluster client, which
// reloads the slot map first and keeps one pool per node, so a promoted replica is pinged on a
// pool of its own.
//
// A ping also checks that each master has the replicas its writes need (see writable): with
// redis.durability.wait-replicas N, N replicas online; with the server's min-replicas-to-write,
// that many good replicas. Until then writes fail whatever a PING answers.
type Prober struct {
	client     redis.UniversalClient
	durability Durability

	mu sync.Mutex
	// own is the client pings go through first on standalone and Sentinel (nil until the first
	// ping, and after a failed one); closed is set by Close.
	own    *redis.Client
	closed bool
}

// NewProber returns a Prober of client, a client New made with durability d (its
// Options.Durability). Close it when done.
func NewProber(client redis.UniversalClient, d Durability) *Prober {
	return &Prober{client: client, durability: d}
}

// rootRetries and rootRetry bound how long, and how often, the Prober pings through the block's
// client after its own ping answered: while go-redis's pool of that client refuses to dial it
// fails at once without dialing, and it lets dials through again as soon as its background
// dial, once a second, succeeds.
const (
	rootRetries = 50
	rootRetry   = 20 * time.Millisecond
)

// Ping checks that Redis answers, to the Prober's own client and then to the block's, like
// Ping; failures are EUNAVAILABLE errors. Once its own ping answered it keeps pinging through
// the block's client for up to a second (rootRetries × rootRetry, or until ctx ends), so that
// it answers as soon as that client's pool dials again.
func (p *Prober) Ping(ctx context.Context) error {
	c, ok := p.client.(*redis.Client)
	if !ok {
		return p.pingCluster(ctx)
	}
	if err := p.pingOwn(ctx, c); err != nil {
		return err
	}
	var err error
	for range rootRetries {
		if err = Ping(ctx, c); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(rootRetry):
		}
	}
	return err
}

// pingOwn pings through the Prober's own client, made from c's options (none after Close),
// and replaces it after a failure.
func (p *Prober) pingOwn(ctx context.Context, c *redis.Client) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	if p.own == nil {
		p.own = redis.NewClient(probeOptions(c.Options()))
	}
	err := Ping(ctx, p.own)
	if err == nil {
		err = p.writable(ctx, p.own)
	}
	if err != nil {
		_ = p.own.Close()
		p.own = nil
	}
	return err
}

// pingCluster pings every master of the cluster client, each one also checked writable.
func (p *Prober) pingCluster(ctx context.Context) error {
	cc := AsCluster(p.client)
	if cc == nil {
		return Ping(ctx, p.client)
	}
	err := cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		if err := node.Ping(ctx).Err(); err != nil {
			return fmt.Errorf("%s: %w", node.Options().Addr, err)
		}
		return p.writable(ctx, node)
	})
	if err != nil && !redstate.IsCode(err, redstate.EUNAVAILABLE) {
		return redstate.Wrap(redstate.EUNAVAILABLE, err, "redis is not reachable")
	}
	return err
}

// Close releases the Prober's own client. Ping still works afterwards, through the block's
// client only.
func (p *Prober) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if p.own == nil {
		return nil
	}
	err := p.own.Close()
	p.own = nil
	return err
}

// probeOptions is a copy of a client's options for the Prober's own client: the same address
// or dialer (on Sentinel the failover client's, which dials the master the sentinels name),
// credentials, TLS and timeouts, with one connection, no retries and no pipeline pool.
func probeOptions(o *redis.Options) *redis.Options {
	c := *o
	c.PoolSize = 1
	c.MinIdleConns = 0
	c.MaxIdleConns = 1
	c.MaxActiveConns = 0
	c.MaxRetries = -1
	c.DialerRetries = 1
	c.PipelinePoolSize = -1
	c.MaintNotificationsConfig = noMaintNotifications()
	return &c
}
