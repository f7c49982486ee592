package redisqueue

import (
	"context"
	"errors"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/coalesce"
	"github.com/redstate/redstate/internal/groups"
	"github.com/redstate/redstate/internal/rediserr"
	"github.com/redstate/redstate/internal/redisscript"
	"github.com/redstate/redstate/internal/resend"
	"github.com/redstate/redstate/queue"
)

// Enqueues made at the same moment leave together (group commit, coalesce.Group): while one
// batch is on its way to Redis, the EnqueueJob calls (and, in batches of their own, the
// Enqueue and EnqueueRaw calls) that arrive wait, and leave in the next as
// one enqueueJobsScript call per queue, every call in one pipeline. A lone call leaves at once
// on its own goroutine, so it pays nothing for the batching; under load N concurrent calls cost
// about one round trip and one script call per batch instead of N, on the client and in Redis.
const (
	// enqueueBatchesInFlight is how many batches of one kind may be on their way at once. One
	// alone kept Redis idle during each round trip on a quiet machine (10 producers: delayed
	// enqueue 0.55-0.61 x asynq against 0.72 without batching); four measured 0.64-0.75 there
	// and kept the gain under load (docs/benchmarks.md).
	enqueueBatchesInFlight = 4
	// enqueueBatchJobs bounds the jobs of one batch.
	enqueueBatchJobs = 64
	// enqueueBatchBytes bounds a batch's encoded messages, so that one script call does not
	// hold Redis for long (a single larger message still leaves, alone).
	enqueueBatchBytes = 512 << 10
)

// pushReq is one Enqueue or EnqueueRaw call waiting for its batch.
type pushReq struct {
	name string
	mark string // the message's marker key, "" for the call's
	raw  string
}

// newPushGroup returns the Broker's coalescer of Enqueue and EnqueueRaw calls.
func (b *Broker) newPushGroup() *coalesce.Group[pushReq, struct{}] {
	return coalesce.NewGroup(coalesce.GroupOptions[pushReq]{
		Workers:  enqueueBatchesInFlight,
		MaxBatch: enqueueBatchJobs,
		Cost:     func(r pushReq) int { return len(r.raw) },
		MaxCost:  enqueueBatchBytes,
	}, b.execPushes)
}

// execPushes runs a batch of pushes: one pushScript call per queue, each with a marker of its
// own (resend.Token), all in one pipeline.
func (b *Broker) execPushes(ctx context.Context, reqs []pushReq) []coalesce.Outcome[struct{}] {
	byQueue := groups.By(groups.Indexes(len(reqs)), func(i int) string { return reqs[i].name })
	calls := make([]redisscript.Call, len(byQueue))
	for g, members := range byQueue {
		k := b.keys(reqs[members[0]].name)
		call := k.Once(resend.Token())
		keys := make([]string, 0, 2+len(members))
		args := make([]any, 0, 1+len(members))
		keys = append(keys, k.Pending, call)
		args = append(args, b.window.Milliseconds())
		for _, i := range members {
			mark := reqs[i].mark
			if mark == "" {
				mark = call
			}
			keys = append(keys, mark)
			args = append(args, reqs[i].raw)
		}
		calls[g] = redisscript.Call{Keys: keys, Args: args}
	}
	out := make([]coalesce.Outcome[struct{}], len(reqs))
	for g, cmd := range redisscript.RunPipelined(ctx, b.client, pushScript, calls) {
		if err := cmd.Err(); err != nil {
			for _, i := range byQueue[g] {
				out[i].Err = mapErr(err, "enqueue")
			}
		}
	}
	return out
}

// enqueueReq is one EnqueueJob call waiting for its batch.
type enqueueReq struct {
	name string
	req  queue.JobRequest
	raw  string // the encoded message
	due  string // due time in Unix ms, "" for pending now
}

// enqueueRes is enqueueJobsScript's reply for one job: {"NEW", ms}, {"OLD", record...} or
// {"UNIQUE", holder}.
type enqueueRes struct {
	reply []string
}

// newEnqueueGroup returns the Broker's coalescer of EnqueueJob calls.
func (b *Broker) newEnqueueGroup() *coalesce.Group[enqueueReq, enqueueRes] {
	return coalesce.NewGroup(coalesce.GroupOptions[enqueueReq]{
		Workers:  enqueueBatchesInFlight,
		MaxBatch: enqueueBatchJobs,
		Cost:     func(r enqueueReq) int { return len(r.raw) },
		MaxCost:  enqueueBatchBytes,
	}, b.execEnqueues)
}

// execEnqueues runs a batch of enqueues: one enqueueJobsScript call per queue, all in one
// pipeline (go-redis splits it per node on Cluster; a queue's keys share one slot).
func (b *Broker) execEnqueues(ctx context.Context, reqs []enqueueReq) []coalesce.Outcome[enqueueRes] {
	byQueue := groups.By(groups.Indexes(len(reqs)), func(i int) string { return reqs[i].name })
	calls := make([]redisscript.Call, len(byQueue))
	for g, members := range byQueue {
		k := b.keys(reqs[members[0]].name)
		keys := make([]string, 0, 2+2*len(members))
		args := make([]any, 0, 1+enqueueJobArgs*len(members))
		keys = append(keys, k.Pending, k.Scheduled)
		args = append(args, k.JobIndexPrefix)
		for _, i := range members {
			r := reqs[i]
			id := r.req.Message.JobID
			unique := k.Job(id) // any key of the slot when there is no lock
			if r.req.UniqueFor > 0 {
				unique = k.Unique(r.req.UniqueKey)
			}
			keys = append(keys, k.Job(id), unique)
			args = append(args, r.raw, id, r.due, r.req.UniqueFor.Milliseconds(), r.req.Retention.Milliseconds())
		}
		calls[g] = redisscript.Call{Keys: keys, Args: args}
	}
	out := make([]coalesce.Outcome[enqueueRes], len(reqs))
	for g, cmd := range redisscript.RunPipelined(ctx, b.client, enqueueJobsScript, calls) {
		replies, err := cmd.Slice()
		for k, i := range byQueue[g] {
			switch {
			case err != nil:
				out[i].Err = mapErr(err, "enqueue job")
			case k >= len(replies):
				out[i].Err = redstate.Errorf(redstate.EINTERNAL, "redisqueue: enqueue answered %d replies for %d jobs", len(replies), len(byQueue[g]))
			default:
				out[i] = enqueueOutcome(replies[k])
			}
		}
	}
	return out
}

// enqueueOutcome decodes one job's reply of enqueueJobsScript.
func enqueueOutcome(reply any) coalesce.Outcome[enqueueRes] {
	items, _ := reply.([]any)
	strs := make([]string, len(items))
	for i, v := range items {
		s, ok := v.(string)
		if !ok {
			return coalesce.Outcome[enqueueRes]{Err: redstate.Errorf(redstate.EINTERNAL, "redisqueue: enqueue answered %v", reply)}
		}
		strs[i] = s
	}
	if len(strs) == 2 && strs[0] == "ERROR" {
		return coalesce.Outcome[enqueueRes]{Err: rediserr.Reply(strs[1], "enqueue job")}
	}
	return coalesce.Outcome[enqueueRes]{Value: enqueueRes{reply: strs}}
}

// batchErr maps the error of a call that left its batch early (its ctx ended while it waited)
// like a direct call's: every error is a *redstate.Error.
func batchErr(err error, op string) error {
	var rerr *redstate.Error
	if err == nil || errors.As(err, &rerr) {
		return err
	}
	return unavailable(err, op)
}
