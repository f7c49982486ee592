package queue

import (
	"sync"
	"time"

	"github.com/redstate/redstate"
)

// errLeaseLapsed is the cause of a running handler's ctx when the worker's lease may have
// expired: no heartbeat succeeded for longer than the lease minus one heartbeat period.
var errLeaseLapsed = redstate.Errorf(redstate.EUNAVAILABLE, "queue lease lapsed: the job may be delivered to another consumer")

// leaseWatch stops a Worker's running handlers before its lease can expire. Another consumer
// recovers the jobs of a consumer whose lease expired (RecoverExpired) and runs them again, so
// a handler still running after that point would run concurrently with its own redelivery.
// Every successful heartbeat re-arms a timer for (send time + lease − margin); when it fires,
// every running handler's ctx is cancelled with errLeaseLapsed (runningJobs.lapse), and the
// worker leaves those jobs unsettled (they are delivered again, once). The send time bounds the
// server's deadline from below (the server adds the lease to its own later receipt time), so
// the handlers are told at least margin before any other consumer may take their jobs.
type leaseWatch struct {
	lease, margin time.Duration
	jobs          *runningJobs
	mu            sync.Mutex
	timer         *time.Timer
}

// newLeaseWatch returns a watch for a lease of lease over jobs, stopping them margin before
// the lease may expire; it is armed by the first renewed.
func newLeaseWatch(lease, margin time.Duration, jobs *runningJobs) *leaseWatch {
	return &leaseWatch{lease: lease, margin: margin, jobs: jobs}
}

// renewed records a heartbeat sent at sentAt that succeeded: the lease runs until at least
// sentAt + lease.
func (l *leaseWatch) renewed(sentAt time.Time) {
	wait := time.Until(sentAt.Add(l.lease - l.margin))
	l.jobs.renewed()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.timer == nil {
		l.timer = time.AfterFunc(wait, l.jobs.lapse)
		return
	}
	l.timer.Reset(wait)
}

// stop disarms the timer.
func (l *leaseWatch) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.timer != nil {
		l.timer.Stop()
	}
}
