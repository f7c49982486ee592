package redisqueue

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
)

// EnqueueJob implements queue.Broker: the job joins the enqueues made at the same moment by
// other callers of this Broker, and they all leave in one enqueueJobsScript call per queue, in
// one round trip (enqueue_batch.go). A job id whose record exists is answered with that record,
// so a copy of the call go-redis sends again returns the job with created false (it is still
// one job).
func (b *Broker) EnqueueJob(ctx context.Context, name string, req queue.JobRequest) (queue.Job, bool, error) {
	raw, err := queue.PrepareJob(name, req)
	if err != nil {
		return queue.Job{}, false, err
	}
	due := ""
	if req.ProcessAt.After(b.clock()) {
		due = formatInt(req.ProcessAt.UnixMilli())
	}
	res, err := b.enqueues.Do(ctx, enqueueReq{name: name, req: req, raw: string(raw), due: due})
	if err != nil {
		return queue.Job{}, false, batchErr(err, "enqueue job")
	}
	v := res.reply
	switch {
	case len(v) == 2 && v[0] == "UNIQUE":
		return queue.Job{}, false, redstate.Errorf(redstate.ECONFLICT, "a job with the same %s was enqueued on queue %q less than %s ago: job %s", uniqueWhat(req), name, req.UniqueFor, v[1])
	case len(v) == 2 && v[0] == "NEW":
		return newJob(name, req, string(raw), due, v[1]), true, nil
	case len(v) > 0 && v[0] == "OLD":
		return decodeJob(name, req.Message.JobID, v[1:]), false, nil
	}
	return queue.Job{}, false, redstate.Errorf(redstate.EINTERNAL, "redisqueue: enqueue job answered %q", v)
}

// newJob is the record enqueueJobScript created for req, from what the caller sent and the
// script's enqueue time (Unix ms): reading it back (HGETALL) and decoding the message again
// cost more client and server time than the rest of the enqueue.
func newJob(name string, req queue.JobRequest, raw, due, enq string) queue.Job {
	msg := req.Message
	// The stored payload is compacted by the encoder; the job answered is the stored one.
	var compact bytes.Buffer
	if json.Compact(&compact, msg.Payload) == nil && compact.Len() != len(msg.Payload) {
		msg.Payload = compact.Bytes()
	}
	j := queue.Job{
		Queue:      name,
		ID:         msg.JobID,
		State:      queue.StatePending,
		Message:    msg,
		Raw:        raw,
		EnqueuedAt: msTime(enq),
		ProcessAt:  msTime(enq),
		Retention:  req.Retention,
	}
	if due != "" {
		j.State, j.ProcessAt = queue.StateScheduled, msTime(due)
	}
	return j
}

// uniqueWhat names what a unique lock is about, for its ECONFLICT.
func uniqueWhat(req queue.JobRequest) string {
	if len(req.UniqueKey) > 3 && req.UniqueKey[:3] == "id-" {
		return "id"
	}
	return "payload"
}

// clock is the broker's clock for due times (Options.Now or the local clock).
func (b *Broker) clock() time.Time {
	if b.now != nil {
		return b.now()
	}
	return time.Now()
}

// Job implements queue.Broker: one HGETALL.
func (b *Broker) Job(ctx context.Context, name, id string) (queue.Job, error) {
	if err := validateJobArgs(name, id); err != nil {
		return queue.Job{}, err
	}
	m, err := b.client.HGetAll(ctx, b.keys(name).Job(id)).Result()
	if err != nil {
		return queue.Job{}, mapErr(err, "job")
	}
	if len(m) == 0 {
		return queue.Job{}, noJob(name, id)
	}
	return jobFromMap(name, id, m), nil
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

// decodeJob decodes a record from HGETALL's flat field, value list.
func decodeJob(name, id string, flat []string) queue.Job {
	m := make(map[string]string, len(flat)/2)
	for i := 0; i+1 < len(flat); i += 2 {
		m[flat[i]] = flat[i+1]
	}
	return jobFromMap(name, id, m)
}

// jobFromMap decodes a record's fields (see jobscripts.go).
func jobFromMap(name, id string, m map[string]string) queue.Job {
	j := queue.Job{
		Queue:           name,
		ID:              id,
		State:           queue.JobState(m["state"]),
		Raw:             m["raw"],
		EnqueuedAt:      msTime(m["enq"]),
		ProcessAt:       msTime(m["due"]),
		FinishedAt:      msTime(m["finished"]),
		CancelRequested: m["cancel"] == "1",
	}
	if msg, err := queue.DecodeMessage([]byte(j.Raw)); err == nil {
		j.Message = msg
	}
	if r, ok := m["result"]; ok {
		j.Result = []byte(r)
	}
	if r, err := strconv.ParseInt(m["retention"], 10, 64); err == nil {
		j.Retention = time.Duration(r) * time.Millisecond
	}
	n, _ := strconv.Atoi(m["attempts"])
	for i := 1; i <= n; i++ {
		s := strconv.Itoa(i)
		j.Attempts = append(j.Attempts, queue.Attempt{Start: msTime(m["s"+s]), End: msTime(m["e"+s]), Consumer: m["c"+s], Error: m["x"+s]})
	}
	return j
}

// msTime parses Unix ms; "" or a bad value is the zero time.
func msTime(s string) time.Time {
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil || ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// StartJob implements queue.Broker: one startJobScript call.
func (b *Broker) StartJob(ctx context.Context, d *queue.Delivery) (queue.JobStart, error) {
	if err := queue.CheckDelivery(d); err != nil {
		return 0, err
	}
	id := queue.RecordID(d.Raw)
	if id == "" || queue.ValidateJobID(id) != nil {
		return 0, redstate.Errorf(redstate.EINVALID, "start job: the delivery has no job record")
	}
	k := b.keys(d.Queue)
	m := b.marker(d.Queue)
	v, err := startJobScript.Run(ctx, b.client, m.Keys(k.Processing(d.ConsumerID), k.Pending, k.Paused, k.Job(id)),
		m.Args(d.Raw, d.ConsumerID, id, k.JobPrefix, k.JobIndexPrefix)...).Text()
	if err != nil {
		return 0, mapErr(err, "start job")
	}
	switch v {
	case "RUN":
		return queue.JobRun, nil
	case "CANCELLED":
		return queue.JobCancelled, nil
	case "PAUSED":
		return queue.JobPaused, nil
	}
	return 0, notInFlight(d)
}

// settleJob runs settleJobScript for a delivery with a record: to is "done", "cancelled",
// "retrying" or "dead"; next is the retry or dead entry, or the result.
func (b *Broker) settleJob(ctx context.Context, d *queue.Delivery, to queue.JobState, place, next string, due int64, errText string) error {
	k := b.keys(d.Queue)
	m := b.marker(d.Queue)
	id := queue.RecordID(d.Raw)
	if queue.ValidateJobID(id) != nil {
		return redstate.Errorf(redstate.EINVALID, "settle job: bad job id in delivery")
	}
	n, err := settleJobScript.Run(ctx, b.client, m.Keys(k.Processing(d.ConsumerID), place, k.Job(id)),
		m.Args(d.Raw, id, string(to), next, due, errText, k.JobPrefix, k.JobIndexPrefix)...).Int()
	if err != nil {
		return mapErr(err, "settle job")
	}
	if n == 0 {
		return notInFlight(d)
	}
	return nil
}

// ackJob acks a delivery with a record: done (with its result) or cancelled.
func (b *Broker) ackJob(ctx context.Context, d *queue.Delivery) error {
	if d.Cancelled {
		return b.settleJob(ctx, d, queue.StateCancelled, b.keys(d.Queue).Processing(d.ConsumerID), "", 0, "cancelled while running")
	}
	return b.settleJob(ctx, d, queue.StateDone, b.keys(d.Queue).Processing(d.ConsumerID), string(d.Result), 0, "")
}

// CancelJob implements queue.Broker: one cancelJobScript call.
func (b *Broker) CancelJob(ctx context.Context, name, id string) (queue.Job, error) {
	if err := validateJobArgs(name, id); err != nil {
		return queue.Job{}, err
	}
	k := b.keys(name)
	m := b.marker(name)
	v, err := cancelJobScript.Run(ctx, b.client, m.Keys(k.Job(id), k.Pending, k.Scheduled, k.Retry),
		m.Args(id, k.JobPrefix, k.JobIndexPrefix)...).StringSlice()
	if err != nil {
		return queue.Job{}, mapErr(err, "cancel job")
	}
	switch {
	case len(v) == 1 && v[0] == "NOTFOUND":
		return queue.Job{}, noJob(name, id)
	case len(v) == 2 && v[0] == "FINISHED":
		return queue.Job{}, redstate.Errorf(redstate.ECONFLICT, "job %q on queue %q is %s already", id, name, v[1])
	case len(v) > 0 && v[0] == "OK":
		return decodeJob(name, id, v[1:]), nil
	}
	return queue.Job{}, redstate.Errorf(redstate.EINTERNAL, "redisqueue: cancel job answered %q", v)
}

// CancelRequested implements queue.Broker: one pipeline of HGET <record> cancel.
func (b *Broker) CancelRequested(ctx context.Context, name string, ids []string) ([]string, error) {
	if err := queue.ValidateQueueName(name); err != nil {
		return nil, err
	}
	k := b.keys(name)
	cmds := make([]*redis.StringCmd, 0, len(ids))
	asked := make([]string, 0, len(ids))
	_, err := b.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, id := range ids {
			if queue.ValidateJobID(id) == nil {
				cmds = append(cmds, p.HGet(ctx, k.Job(id), "cancel"))
				asked = append(asked, id)
			}
		}
		return nil
	})
	if err != nil && err != redis.Nil {
		return nil, mapErr(err, "cancel requests")
	}
	var out []string
	for i, c := range cmds {
		if c.Val() == "1" {
			out = append(out, asked[i])
		}
	}
	return out, nil
}

// Jobs implements queue.Broker: ZRANGE of the state's index, then one pipeline of HGETALL.
// Index entries whose record expired are skipped (and dropped).
func (b *Broker) Jobs(ctx context.Context, name string, state queue.JobState, cursor string, limit int) ([]queue.Job, string, error) {
	offset, err := queue.CheckJobsArgs(name, state, cursor, limit)
	if err != nil {
		return nil, "", err
	}
	k := b.keys(name)
	index := k.JobIndexPrefix + string(state)
	ids, err := b.client.ZRange(ctx, index, int64(offset), int64(offset+limit)).Result()
	if err != nil {
		return nil, "", mapErr(err, "jobs")
	}
	next := ""
	if len(ids) > limit {
		ids, next = ids[:limit], strconv.Itoa(offset+limit)
	}
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	if _, err := b.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.HGetAll(ctx, k.Job(id))
		}
		return nil
	}); err != nil {
		return nil, "", mapErr(err, "jobs")
	}
	out := []queue.Job{}
	var gone []any
	for i, c := range cmds {
		if len(c.Val()) == 0 {
			gone = append(gone, ids[i])
			continue
		}
		if j := jobFromMap(name, ids[i], c.Val()); j.State == state {
			out = append(out, j)
		}
	}
	if len(gone) > 0 {
		_ = b.client.ZRem(ctx, index, gone...).Err() // best effort: the next listing retries
	}
	return out, next, nil
}

// RequeueJob implements queue.Broker: one requeueJobScript call.
func (b *Broker) RequeueJob(ctx context.Context, name, id string) (queue.Job, error) {
	if err := validateJobArgs(name, id); err != nil {
		return queue.Job{}, err
	}
	k := b.keys(name)
	m := b.marker(name)
	v, err := requeueJobScript.Run(ctx, b.client, m.Keys(k.Job(id), k.Dead, k.Pending),
		m.Args(id, k.JobPrefix, k.JobIndexPrefix)...).StringSlice()
	if err != nil {
		return queue.Job{}, mapErr(err, "requeue job")
	}
	switch {
	case len(v) == 1 && v[0] == "NOTFOUND":
		return queue.Job{}, noJob(name, id)
	case len(v) == 1 && v[0] == "PURGED":
		return queue.Job{}, redstate.Errorf(redstate.ENOTFOUND, "job %q on queue %q is no longer on the dead-letter list (purged)", id, name)
	case len(v) == 2 && v[0] == "STATE":
		return queue.Job{}, redstate.Errorf(redstate.ECONFLICT, "job %q on queue %q is %s, not dead", id, name, v[1])
	case len(v) > 0 && v[0] == "OK":
		return decodeJob(name, id, v[1:]), nil
	}
	return queue.Job{}, redstate.Errorf(redstate.EINTERNAL, "redisqueue: requeue job answered %q", v)
}

// Pause implements queue.Broker: SET <q>:paused 1.
func (b *Broker) Pause(ctx context.Context, name string) error {
	if err := queue.ValidateQueueName(name); err != nil {
		return err
	}
	return mapErr(b.client.Set(ctx, b.keys(name).Paused, "1", 0).Err(), "pause")
}

// Resume implements queue.Broker: DEL <q>:paused.
func (b *Broker) Resume(ctx context.Context, name string) error {
	if err := queue.ValidateQueueName(name); err != nil {
		return err
	}
	return mapErr(b.client.Del(ctx, b.keys(name).Paused).Err(), "resume")
}

// Paused implements queue.Broker: EXISTS <q>:paused.
func (b *Broker) Paused(ctx context.Context, name string) (bool, error) {
	if err := queue.ValidateQueueName(name); err != nil {
		return false, err
	}
	n, err := b.client.Exists(ctx, b.keys(name).Paused).Result()
	if err != nil {
		return false, mapErr(err, "paused")
	}
	return n == 1, nil
}

// releaseIfPaused gives d back to the head of pending when its queue was paused while the
// blocking BLMOVE that took it waited, and tells whether it did. Only the blocking path needs
// it: the non-blocking dequeue checks the pause in its script.
func (b *Broker) releaseIfPaused(ctx context.Context, d *queue.Delivery) (bool, error) {
	paused, err := b.Paused(ctx, d.Queue)
	if err != nil || !paused {
		return false, err
	}
	n, err := b.Release(ctx, []*queue.Delivery{d})
	return n == 1, err
}
