package redisconn

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
)

// clusterDurable makes every write on the cluster client c wait for replicas when d is on, and
// returns c.
//
// Each node client go-redis creates gets the WAIT hook (OnNewNode): go-redis runs a cluster
// command on its node's client (Process, or a pipeline [ASKING, command] after an ASK) and a
// cluster pipeline's per-node part through that node client's pipeline hooks on one connection,
// so every write is followed by WAIT on the master that ran it, which counts that master's own
// replicas. A write answered MOVED or ASK is not counted as done: its WAIT (harmless; on a
// demoted master it fails) only concerns the writes that succeeded, and go-redis resends the
// write to the right node, where it gets its own WAIT. go-redis builds a node's chain for a
// cluster pipeline at each call, after installation, so the hook takes it for a Conn's chain:
// a pipeline gets its WAIT appended either way.
//
// go-redis's cluster transaction runs MULTI … EXEC on a pooled connection and releases it
// before a WAIT could follow, so clusterWait takes transactions with writes over on the
// cluster client (see clusterWait.tx).
func clusterDurable(c *redis.ClusterClient, d Durability) *redis.ClusterClient {
	if !d.On() {
		return c
	}
	w := &clusterWait{cluster: c, redirects: max(c.Options().MaxRedirects, 1), nodes: map[string]*waitHook{}}
	c.OnNewNode(func(node *redis.Client) { w.add(installWaitHook(node, d)) })
	c.AddHook(w)
	waiting.Store(c, true)
	return c
}

// clusterWait is the cluster client's hook: it runs transactions with writes itself, on the
// WAIT hook of the node that owns their slot.
type clusterWait struct {
	cluster   *redis.ClusterClient
	redirects int // MOVED, ASK and TRYAGAIN answers followed per transaction

	mu    sync.Mutex
	nodes map[string]*waitHook // by node address; the newest client of each address
}

// add records the WAIT hook of a new node client.
func (w *clusterWait) add(h *waitHook) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.nodes[h.client.Options().Addr] = h
}

// hook returns the WAIT hook of the node client at addr, nil when go-redis made none (yet).
func (w *clusterWait) hook(addr string) *waitHook {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.nodes[addr]
}

// DialHook implements redis.Hook (unchanged).
func (w *clusterWait) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook implements redis.Hook (unchanged: the node clients' hooks wait).
func (w *clusterWait) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

// ProcessPipelineHook implements redis.Hook: a transaction with a write runs in tx; everything
// else goes on to go-redis, whose node clients' hooks wait.
func (w *clusterWait) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if !isTx(cmds) || !anyWrites(cmds) {
			return next(ctx, cmds)
		}
		return w.tx(ctx, cmds[1:len(cmds)-1])
	}
}

// tx runs a transaction's commands in MULTI … EXEC and WAIT on one connection of the master of
// their slot, like go-redis's cluster transaction: it starts on the master the cluster state
// names for the first key, follows MOVED (to the named node) and ASK (ASKING before MULTI), and
// retries after TRYAGAIN and CLUSTERDOWN with a short pause, up to redirects times. After a
// MOVED it has the cluster state reloaded once the transaction is over: a reload running while
// the transaction takes its first connection to a node races inside go-redis (a Conn and its
// client share their Options under different locks while the first handshake updates them).
func (w *clusterWait) tx(ctx context.Context, inner []redis.Cmder) error {
	var (
		addr   string // the node a redirection named; "" asks the cluster state
		asking bool
		moved  bool
		err    error
	)
	defer func() {
		if moved {
			w.cluster.ReloadState(ctx)
		}
	}()
	for attempt := 0; attempt <= w.redirects; attempt++ {
		h := w.hook(addr)
		if h == nil {
			if h, err = w.master(ctx, inner); err != nil {
				for _, c := range inner {
					c.SetErr(err)
				}
				return err
			}
		}
		for _, c := range inner {
			c.SetErr(nil)
		}
		err = h.tx(ctx, inner, asking)
		redirect := redirection(err, inner)
		if redirect == nil {
			return err
		}
		addr, asking = "", false
		if to, ok := redis.IsMovedError(redirect); ok {
			addr, moved = to, true
		} else if to, ok := redis.IsAskError(redirect); ok {
			addr, asking = to, true
		}
		if addr == "" || w.hook(addr) == nil {
			// TRYAGAIN, CLUSTERDOWN or a node go-redis does not know yet: give the cluster
			// (and the reloaded state) a moment.
			w.cluster.ReloadState(ctx)
			if perr := pause(ctx, attempt); perr != nil {
				return perr
			}
		}
	}
	return err
}

// master returns the WAIT hook of the master the cluster state names for the transaction's
// first key.
func (w *clusterWait) master(ctx context.Context, inner []redis.Cmder) (*waitHook, error) {
	node, err := w.cluster.MasterForKey(ctx, firstKey(inner))
	if err != nil {
		return nil, err
	}
	if h := w.hook(node.Options().Addr); h != nil {
		return h, nil
	}
	return nil, redstate.Errorf(redstate.EINTERNAL, "redisconn: redis.durability: no WAIT hook on cluster node %s", node.Options().Addr)
}

// redirection returns the error that sends the transaction elsewhere or asks for a retry
// (MOVED, ASK, TRYAGAIN or CLUSTERDOWN, which queued commands carry or EXEC does, or the closed
// client of a node go-redis dropped from its state), nil when there is none.
func redirection(err error, inner []redis.Cmder) error {
	for _, e := range append(errs(inner), err) {
		if _, ok := redis.IsMovedError(e); ok {
			return e
		}
		if _, ok := redis.IsAskError(e); ok {
			return e
		}
		if redis.IsTryAgainError(e) || redis.IsClusterDownError(e) || errors.Is(e, redis.ErrClosed) {
			return e
		}
	}
	return nil
}

// errs returns the errors of cmds, nil for those without.
func errs(cmds []redis.Cmder) []error {
	out := make([]error, len(cmds))
	for i, c := range cmds {
		out[i] = c.Err()
	}
	return out
}

// pause waits a little longer with each attempt (10 ms, 20 ms, … up to 100 ms).
func pause(ctx context.Context, attempt int) error {
	t := time.NewTimer(min(time.Duration(attempt+1)*10*time.Millisecond, 100*time.Millisecond))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// firstKey returns the first key of cmds where most commands put it (the first argument, or
// the first after numkeys for scripts and functions), "" when there is none. It only picks the
// node to try first: a wrong guess costs one MOVED.
func firstKey(cmds []redis.Cmder) string {
	for _, c := range cmds {
		args, pos := c.Args(), 1
		switch c.Name() {
		case "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro":
			if len(args) < 3 || fmt.Sprint(args[2]) == "0" {
				continue
			}
			pos = 3
		}
		if len(args) > pos {
			if key, ok := args[pos].(string); ok {
				return key
			}
		}
	}
	return ""
}
