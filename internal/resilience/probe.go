package resilience

import (
	"context"
	"time"

	"github.com/failsafe-go/failsafe-go/circuitbreaker"
)

// Probe checks whether Redis answers (nil: it does). serve's probe is a redisconn.Prober of the
// root client: on Sentinel it dials the master the sentinels name at that moment, on Cluster it
// pings every master, so it answers as soon as the new master of a failover can be reached.
type Probe func(ctx context.Context) error

// probeTimeout bounds one ping of the probe: a dial to a host that does not answer, a stalled
// server.
const probeTimeout = time.Second

// WithProbe makes the breaker check Redis itself while it is open, instead of only after
// WaitDurationInOpenState: every ProbeInterval it runs probe, one at a time. Once the probe
// answers after a failure it sees (the failure that opened the breaker was a lost connection, a
// timeout, a topology change such as READONLY or CLUSTERDOWN, a master short of replicas:
// probeSees; or an earlier probe failed), the breaker half-opens and the probe keeps running as
// its trial calls (through Do) until the breaker closes, opens again, or the probe fails. An
// answer while the calls fail on replies the probe does not see (BUSY, OOM, NOPERM: the
// server answers the probe all along) does not shorten the wait.
//
// The probe is one goroutine per breaker; it pings only while the breaker is not closed.
// Close the breaker to stop it.
func WithProbe(probe Probe) BreakerOption {
	return func(b *Breaker) { b.probe = probe }
}

// probeLoop runs the probe after each opening until the breaker closes, until ctx ends.
func (b *Breaker) probeLoop(ctx context.Context) {
	defer close(b.stopped)
	for {
		select {
		case <-ctx.Done():
			return
		case <-b.wake:
		}
		b.probeUntilClosed(ctx)
	}
}

// probeUntilClosed probes every probeEvery until the breaker is closed or ctx ends.
func (b *Breaker) probeUntilClosed(ctx context.Context) {
	t := time.NewTicker(b.probeEvery)
	defer t.Stop()
	for b.cb.State() != circuitbreaker.ClosedState {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		b.probeOnce(ctx)
	}
}

// probeOnce pings Redis once while the breaker is open and its wait is not over, half-opening
// it when the ping answers after a failure the probe sees; then, half-open (or open with the
// wait over), it pings as trial calls until the breaker closes, opens again or a ping fails.
// (failsafe-go has no compare-and-swap: should trial calls of requests close the breaker
// between the state check and HalfOpen, the trial pings close it again at once.)
func (b *Breaker) probeOnce(ctx context.Context) {
	if b.cb.IsOpen() && b.cb.RemainingDelay() > 0 {
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		err := b.probe(pctx)
		cancel()
		if !b.answeredAfterOutage(err) {
			return
		}
		b.cb.HalfOpen()
	}
	for range b.window + 1 { // closing takes at most window successes
		if b.cb.IsClosed() || ctx.Err() != nil {
			return
		}
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		err := b.Do(pctx, func() error { return b.probe(pctx) })
		cancel()
		if err != nil {
			return
		}
	}
}

// answeredAfterOutage records a ping's outcome while the breaker is open and reports whether
// it ends the wait: it answered, after a failure the probe sees, and the backoff allows it.
func (b *Breaker) answeredAfterOutage(err error) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err != nil {
		b.out.probeMayEnd = true
		return false
	}
	if !b.out.probeMayEnd || b.now().Sub(b.openedAt) < b.probeBackoff() {
		return false
	}
	b.cuts++
	return true
}

// maxBackoffShift bounds the doubling of probeBackoff (the wait caps it anyway).
const maxBackoffShift = 16

// probeBackoff is how long after an opening the probe may end the wait: at once the first
// time, then twice as long after each end that did not last (ProbeInterval × 2, × 4, …, at most
// WaitDurationInOpenState), until the breaker stays closed longer than its wait. Redis can
// answer the probe while calls keep failing (stale connections after a restart, a Cluster
// client's slot map still naming a dead master): the backoff bounds how often the breaker
// closes and opens again then. Callers hold b.mu.
func (b *Breaker) probeBackoff() time.Duration {
	if b.cuts == 0 {
		return 0
	}
	return min(b.probeEvery<<min(b.cuts, maxBackoffShift), b.wait)
}
