package redisqueue

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/redisscript"
	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/redisconn"
)

// unblockTimeout bounds the CLIENT UNBLOCK that ends a blocking BLMOVE early.
const unblockTimeout = 2 * time.Second

// unblockRetry is the pause between CLIENT UNBLOCK attempts that found the connection not
// (yet) blocked.
const unblockRetry = 5 * time.Millisecond

// Dequeue implements queue.Broker: DequeueBatch with max 1.
func (b *Broker) Dequeue(ctx context.Context, name, consumerID string, timeout time.Duration) (*queue.Delivery, error) {
	return queue.DequeueOne(ctx, b, name, consumerID, timeout)
}

// DequeueBatch implements queue.Broker.
//
// Fast path: one dequeueScript call on the shared client (check the lease, then up to max
// non-blocking LMOVEs pending → processing:<consumer>). When a job is waiting that is the
// only round trip, and one Lua call and one lease check serve up to max jobs.
//
// Otherwise it takes a dedicated connection to the node holding the queue, fetches its
// CLIENT ID pipelined with a second dequeueScript (so a job that arrived meanwhile is taken
// at once), and then blocks in BLMOVE pending processing:<consumer> RIGHT LEFT for at most
// min(time left, half the lease left), checking the lease again after each block: no polling,
// a job that arrives is taken at once. A block returns at most one job. The dedicated
// connection and its CLIENT ID are needed only for a wait, so the fast path never pays for
// them.
//
// go-redis does not interrupt a blocked command when its ctx ends (ContextTimeoutEnabled
// covers deadlines only, and closing the connection could lose a job the server has just
// moved). So the wait is ended from the server side: when ctx ends, or when a timeout that is
// not a whole number of seconds (BLMOVE here takes whole seconds) runs out, another
// connection sends CLIENT UNBLOCK <id> TIMEOUT. The server then either has already moved a
// job (it is returned: the job is delivered, not lost) or answers as on a timeout.
//
// Lease window: the lease is checked by the script and the BLMOVE may serve a job up to one
// block later. Blocks last at most half the lease left, so the job reaches the processing list
// before the lease deadline (unless the BLMOVE takes longer than half the lease to arrive),
// and RecoverExpired, which re-checks the deadline atomically, sees it. A consumer that loses
// its lease meanwhile costs at most a duplicate delivery (at-least-once), never a lost job.
func (b *Broker) DequeueBatch(ctx context.Context, name, consumerID string, maxJobs int, timeout time.Duration) ([]*queue.Delivery, error) {
	if err := queue.CheckDequeueArgs(ctx, name, consumerID, maxJobs, timeout); err != nil {
		return nil, err
	}
	k := b.keys(name)
	proc := k.Processing(consumerID)
	keys := []string{k.Consumers, k.Pending, proc}
	args := []any{consumerID, b.nowArg(), maxJobs}

	end := time.Now().Add(timeout)
	var (
		node   *redis.Client
		conn   *redis.Conn // dedicated connection, taken before the first wait
		connID = int64(-1)
	)
	defer func() {
		if conn != nil {
			_ = conn.Close()
		}
	}()
	for {
		res, err := b.tryDequeue(ctx, conn, &connID, name, keys, args)
		if err != nil {
			b.reloadOnMoved(ctx, err)
			return nil, ctxOrMapErr(ctx, err, "dequeue")
		}
		if res.conflict {
			return nil, redstate.Errorf(redstate.ECONFLICT, "consumer %q holds no live lease on queue %q (heartbeat first)", consumerID, name)
		}
		if res.paused {
			if !queue.WaitPaused(ctx, end) {
				return nil, ctx.Err()
			}
			if time.Now().After(end) {
				return nil, nil
			}
			continue
		}
		if len(res.raws) > 0 {
			ds := make([]*queue.Delivery, len(res.raws))
			for i, raw := range res.raws {
				ds[i] = queue.NewDelivery(name, consumerID, raw)
			}
			return ds, nil
		}
		wait := time.Until(end)
		if wait <= 0 {
			return nil, nil
		}
		if conn == nil {
			// About to wait: take the dedicated connection; the next step fetches its
			// CLIENT ID together with another dequeueScript.
			if node, err = b.node(ctx, k.Pending); err != nil {
				return nil, err
			}
			conn = node.Conn()
			continue
		}
		if half := res.leaseLeft / 2; half < wait {
			wait = max(half, time.Millisecond)
		}
		raw, ok, err := block(ctx, node, conn, connID, k.Pending, proc, wait)
		if err != nil {
			b.reloadOnMoved(ctx, err)
			return nil, ctxOrMapErr(ctx, err, "dequeue")
		}
		if ok {
			d := queue.NewDelivery(name, consumerID, raw)
			if back, err := b.releaseIfPaused(ctx, d); err != nil || !back {
				return []*queue.Delivery{d}, nil // delivered: a failed check must not strand it
			}
			continue // paused while this BLMOVE waited: the job is back at the head
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

// dequeueResult is the outcome of dequeueScript.
type dequeueResult struct {
	conflict  bool          // no live lease
	paused    bool          // the queue is paused: nothing moved
	leaseLeft time.Duration // time to the lease deadline
	raws      []string      // the moved jobs, in pending order
}

// tryDequeue runs dequeueScript on queue name, marking the call: on the shared client when
// conn is nil, else on conn; when *connID < 0 it fetches conn's CLIENT ID in the same round
// trip and stores it.
func (b *Broker) tryDequeue(ctx context.Context, conn *redis.Conn, connID *int64, name string, keys []string, args []any) (dequeueResult, error) {
	m := b.marker(name)
	keys, args = append(m.Keys(keys...), b.keys(name).Paused), m.Args(args...)
	var cmd *redis.Cmd
	switch {
	case conn == nil:
		cmd = dequeueScript.Run(ctx, b.client, keys, args...)
	case *connID < 0:
		var idCmd *redis.IntCmd
		_, _ = conn.Pipelined(ctx, func(p redis.Pipeliner) error {
			idCmd = p.ClientID(ctx)
			cmd = dequeueScript.EvalSha(ctx, p, keys, args...)
			return nil
		})
		id, err := idCmd.Result()
		if err != nil {
			return dequeueResult{}, err
		}
		*connID = id
		cmd = redisscript.EvalOnNoScript(ctx, conn, dequeueScript, cmd, keys, args...)
	default:
		cmd = dequeueScript.Run(ctx, conn, keys, args...)
	}
	v, err := cmd.Slice()
	if movedAnyway(err) {
		v, _ = cmd.Val().([]any)
	} else if err != nil {
		return dequeueResult{}, err
	}
	if len(v) == 1 && v[0] == "PAUSED" {
		return dequeueResult{paused: true}, nil
	}
	if len(v) < 2 || v[0] != "OK" {
		return dequeueResult{conflict: true}, nil
	}
	left, _ := v[1].(int64)
	r := dequeueResult{leaseLeft: time.Duration(left) * time.Millisecond}
	if len(v) > 2 {
		r.raws = make([]string, 0, len(v)-2)
		for _, x := range v[2:] {
			if raw, ok := x.(string); ok {
				r.raws = append(r.raws, raw)
			}
		}
	}
	return r, nil
}

// block runs BLMOVE src dst RIGHT LEFT on conn (whose CLIENT ID is connID) for at most wait
// and returns the moved string, if any. BLMOVE is sent with wait rounded up to whole seconds;
// when ctx ends or a fractional wait runs out, CLIENT UNBLOCK connID (TIMEOUT mode) is sent
// through node, so the call returns as on a timeout unless the server has already moved a
// job, which is then returned.
func block(ctx context.Context, node *redis.Client, conn *redis.Conn, connID int64, src, dst string, wait time.Duration) (string, bool, error) {
	secs := (wait + time.Second - 1) / time.Second * time.Second
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		var expire <-chan time.Time
		if secs != wait {
			t := time.NewTimer(wait)
			defer t.Stop()
			expire = t.C
		}
		select {
		case <-done:
			return
		case <-ctx.Done():
		case <-expire:
		}
		unblock(context.WithoutCancel(ctx), node, connID, done)
	}()
	cmd := conn.BLMove(context.WithoutCancel(ctx), src, dst, "RIGHT", "LEFT", secs)
	close(done)
	<-finished
	raw, err := cmd.Result()
	switch {
	case errors.Is(err, redis.Nil):
		return "", false, nil
	case movedAnyway(err):
		return cmd.Val(), true, nil
	case err != nil:
		return "", false, err
	}
	return raw, true, nil
}

// movedAnyway reports whether a dequeue's move failed only for want of replicas
// (redis.durability.wait-replicas: redisconn.ErrNotDurable): the move was applied, and the
// dequeue delivers the jobs it moved. They are in this consumer's processing list, which
// nothing recovers while the consumer keeps its lease, so an error would strand them until the
// process stops. If a failover loses the move, the jobs are pending again on the new master
// and are delivered once more: a duplicate, which at-least-once allows. Writes that record a
// caller's data (enqueue, ack, retry, bury) still report ErrNotDurable.
func movedAnyway(err error) bool { return errors.Is(err, redisconn.ErrNotDurable) }

// unblock sends CLIENT UNBLOCK connID until it unblocks the connection, done is closed (the
// BLMOVE returned by itself), or unblockTimeout passes. A reply of 0 means the BLMOVE has not
// reached the server yet (or already returned), so it is retried shortly.
func unblock(ctx context.Context, node *redis.Client, connID int64, done <-chan struct{}) {
	ctx, cancel := context.WithTimeout(ctx, unblockTimeout)
	defer cancel()
	for {
		n, err := node.ClientUnblock(ctx, connID).Result()
		if err != nil || n == 1 {
			return
		}
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-time.After(unblockRetry):
		}
	}
}

// formatInt formats n in decimal.
func formatInt(n int64) string { return strconv.FormatInt(n, 10) }
