package memqueue

import (
	"context"
	"encoding/json"
	"sort"
	"strconv"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
)

// record is the record of one job enqueued with EnqueueJob. Guarded by Broker.mu.
type record struct {
	job      queue.Job
	consumer string    // the consumer running it (active)
	since    time.Time // last state change: the order of Jobs
	seq      uint64    // tie-break of since
	expires  time.Time // zero while the job is not finished
}

// unique is one unique lock: the job holding it and when it ends.
type unique struct {
	id    string
	until time.Time
}

// record returns the live record of id, dropping it if its retention ended. b.mu must be held.
func (b *Broker) record(s *state, id string) *record {
	r := s.records[id]
	if r != nil && !r.expires.IsZero() && !b.now().Before(r.expires) {
		delete(s.records, id)
		return nil
	}
	return r
}

// recordOf returns the record of a stored string, nil when it has none. b.mu must be held.
func (b *Broker) recordOf(s *state, raw string) *record {
	id := queue.RecordID(raw)
	if id == "" {
		return nil
	}
	return b.record(s, id)
}

// move puts r in state to, storing raw as its current string when raw is not "". b.mu must be
// held.
func (b *Broker) move(r *record, to queue.JobState, raw string) {
	now := b.now()
	r.job.State = to
	if raw != "" {
		r.job.Raw = raw
		if m, err := queue.DecodeMessage([]byte(raw)); err == nil {
			r.job.Message = m
		}
	}
	b.seq++
	r.since, r.seq = now, b.seq
	if to.Finished() {
		r.job.FinishedAt = now
		r.expires = now.Add(r.job.Retention)
	}
}

// endAttempt closes r's running attempt with errText.
func endAttempt(r *record, now time.Time, errText string) {
	if n := len(r.job.Attempts); n > 0 && r.job.Attempts[n-1].End.IsZero() {
		r.job.Attempts[n-1].End = now
		r.job.Attempts[n-1].Error = errText
	}
}

// movePending puts the records of raws (moved back to pending: released, recovered, promoted,
// requeued) in state pending; a cancelled job stays cancelled (StartJob refuses it). b.mu must
// be held.
func (b *Broker) movePending(s *state, raws []string) {
	for _, raw := range raws {
		if r := b.recordOf(s, raw); r != nil && r.job.State != queue.StateDone && r.job.State != queue.StateCancelled {
			r.expires, r.job.FinishedAt = time.Time{}, time.Time{} // a requeued dead job lives again
			if r.job.State == queue.StateActive {
				endAttempt(r, b.now(), "interrupted: returned to pending")
			}
			b.move(r, queue.StatePending, raw)
		}
	}
}

// snapshot returns a copy of r's job.
func snapshot(r *record) queue.Job {
	j := r.job
	j.Attempts = append([]queue.Attempt(nil), j.Attempts...)
	return j
}

// EnqueueJob implements queue.Broker.
func (b *Broker) EnqueueJob(_ context.Context, name string, req queue.JobRequest) (queue.Job, bool, error) {
	raw, err := queue.PrepareJob(name, req)
	if err != nil {
		return queue.Job{}, false, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.q(name)
	now := b.now()
	id := req.Message.JobID
	if r := b.record(s, id); r != nil {
		return snapshot(r), false, nil
	}
	if req.UniqueFor > 0 {
		if u, ok := s.uniques[req.UniqueKey]; ok && now.Before(u.until) {
			return queue.Job{}, false, redstate.Errorf(redstate.ECONFLICT, "a job with the same %s exists on queue %q: job %s", uniqueWhat(req), name, u.id)
		}
		s.uniques[req.UniqueKey] = unique{id: id, until: now.Add(req.UniqueFor)}
	}
	r := &record{job: queue.Job{Queue: name, ID: id, EnqueuedAt: now, Retention: req.Retention}}
	if req.ProcessAt.After(now) {
		r.job.ProcessAt = req.ProcessAt
		s.scheduled[string(raw)] = req.ProcessAt
		b.move(r, queue.StateScheduled, string(raw))
	} else {
		r.job.ProcessAt = now
		s.push(string(raw))
		b.move(r, queue.StatePending, string(raw))
	}
	s.records[id] = r
	return snapshot(r), true, nil
}

// uniqueWhat names what a unique lock is about, for its ECONFLICT.
func uniqueWhat(req queue.JobRequest) string {
	if len(req.UniqueKey) > 3 && req.UniqueKey[:3] == "id-" {
		return "id"
	}
	return "payload"
}

// Job implements queue.Broker.
func (b *Broker) Job(_ context.Context, name, id string) (queue.Job, error) {
	if err := validateJobArgs(name, id); err != nil {
		return queue.Job{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.record(b.q(name), id)
	if r == nil {
		return queue.Job{}, noJob(name, id)
	}
	return snapshot(r), nil
}

// validateJobArgs checks a queue name and a job id. Errors: EINVALID.
func validateJobArgs(name, id string) error {
	if err := queue.ValidateQueueName(name); err != nil {
		return err
	}
	return queue.ValidateJobID(id)
}

// noJob is the ENOTFOUND of a job without a record.
func noJob(name, id string) error {
	return redstate.Errorf(redstate.ENOTFOUND, "no job %q on queue %q", id, name)
}

// StartJob implements queue.Broker.
func (b *Broker) StartJob(_ context.Context, d *queue.Delivery) (queue.JobStart, error) {
	if err := queue.CheckDelivery(d); err != nil {
		return 0, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.q(d.Queue)
	r := b.recordOf(s, d.Raw)
	switch {
	case r != nil && r.job.State == queue.StateCancelled:
		if err := b.take(d); err != nil {
			return 0, err
		}
		return queue.JobCancelled, nil
	case s.paused:
		if err := b.take(d); err != nil {
			return 0, err
		}
		s.pushFront([]string{d.Raw})
		return queue.JobPaused, nil
	}
	if !slicesContains(s.inflight[d.ConsumerID], d.Raw) {
		return 0, redstate.Errorf(redstate.ECONFLICT, "job is no longer in flight at consumer %q", d.ConsumerID)
	}
	if r != nil {
		endAttempt(r, b.now(), "interrupted: started again")
		r.consumer = d.ConsumerID
		r.job.Attempts = append(r.job.Attempts, queue.Attempt{Start: b.now(), Consumer: d.ConsumerID})
		b.move(r, queue.StateActive, d.Raw)
	}
	return queue.JobRun, nil
}

// slicesContains tells whether list holds v.
func slicesContains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// settled updates the record of d's job after it left the in-flight list by Ack (to done or,
// if d.Cancelled, cancelled), Retry (retrying, raw next) or Bury (dead, raw the dead letter).
// b.mu must be held.
func (b *Broker) settled(d *queue.Delivery, to queue.JobState, raw, errText string) {
	s := b.q(d.Queue)
	r := b.recordOf(s, d.Raw)
	if r == nil {
		return
	}
	endAttempt(r, b.now(), errText)
	r.consumer = ""
	if to == queue.StateDone && d.Cancelled {
		to = queue.StateCancelled
	}
	if to == queue.StateDone && d.Result != nil {
		r.job.Result = append(json.RawMessage(nil), d.Result...)
	}
	b.move(r, to, raw)
}

// CancelJob implements queue.Broker.
func (b *Broker) CancelJob(_ context.Context, name, id string) (queue.Job, error) {
	if err := validateJobArgs(name, id); err != nil {
		return queue.Job{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.q(name)
	r := b.record(s, id)
	if r == nil {
		return queue.Job{}, noJob(name, id)
	}
	switch r.job.State {
	case queue.StateDone, queue.StateDead, queue.StateCancelled:
		return queue.Job{}, redstate.Errorf(redstate.ECONFLICT, "job %q on queue %q is %s already", id, name, r.job.State)
	case queue.StateActive:
		r.job.CancelRequested = true
		return snapshot(r), nil
	case queue.StateScheduled:
		delete(s.scheduled, r.job.Raw)
	case queue.StateRetrying:
		delete(s.retry, r.job.Raw)
	case queue.StatePending:
		// If it is no longer on the list a worker dequeued it: StartJob will refuse it.
		for i, raw := range s.pending {
			if raw == r.job.Raw {
				s.pending = append(s.pending[:i:i], s.pending[i+1:]...)
				break
			}
		}
	}
	b.move(r, queue.StateCancelled, "")
	return snapshot(r), nil
}

// CancelRequested implements queue.Broker.
func (b *Broker) CancelRequested(_ context.Context, name string, ids []string) ([]string, error) {
	if err := queue.ValidateQueueName(name); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.q(name)
	var out []string
	for _, id := range ids {
		if r := b.record(s, id); r != nil && r.job.CancelRequested {
			out = append(out, id)
		}
	}
	return out, nil
}

// Jobs implements queue.Broker.
func (b *Broker) Jobs(_ context.Context, name string, st queue.JobState, cursor string, limit int) ([]queue.Job, string, error) {
	offset, err := queue.CheckJobsArgs(name, st, cursor, limit)
	if err != nil {
		return nil, "", err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.q(name)
	var rs []*record
	for id := range s.records {
		if r := b.record(s, id); r != nil && r.job.State == st {
			rs = append(rs, r)
		}
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].seq < rs[j].seq })
	out := []queue.Job{}
	for i := offset; i < len(rs) && len(out) < limit; i++ {
		out = append(out, snapshot(rs[i]))
	}
	next := ""
	if offset+len(out) < len(rs) {
		next = strconv.Itoa(offset + len(out))
	}
	return out, next, nil
}

// RequeueJob implements queue.Broker.
func (b *Broker) RequeueJob(_ context.Context, name, id string) (queue.Job, error) {
	if err := validateJobArgs(name, id); err != nil {
		return queue.Job{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.q(name)
	r := b.record(s, id)
	if r == nil {
		return queue.Job{}, noJob(name, id)
	}
	if r.job.State != queue.StateDead {
		return queue.Job{}, redstate.Errorf(redstate.ECONFLICT, "job %q on queue %q is %s, not dead", id, name, r.job.State)
	}
	for i, raw := range s.dead {
		if raw == r.job.Raw {
			s.dead = append(s.dead[:i:i], s.dead[i+1:]...)
			s.push(raw)
			b.movePending(s, []string{raw})
			return snapshot(r), nil
		}
	}
	return queue.Job{}, redstate.Errorf(redstate.ENOTFOUND, "job %q on queue %q is no longer on the dead-letter list (purged)", id, name)
}

// Pause implements queue.Broker.
func (b *Broker) Pause(_ context.Context, name string) error { return b.setPaused(name, true) }

// Resume implements queue.Broker.
func (b *Broker) Resume(_ context.Context, name string) error { return b.setPaused(name, false) }

func (b *Broker) setPaused(name string, paused bool) error {
	if err := queue.ValidateQueueName(name); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.q(name)
	s.paused = paused
	if !paused {
		s.wake()
	}
	return nil
}

// Paused implements queue.Broker.
func (b *Broker) Paused(_ context.Context, name string) (bool, error) {
	if err := queue.ValidateQueueName(name); err != nil {
		return false, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.q(name).paused, nil
}
