package redisqueue

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/redistest"
)

// One batch of enqueues behaves as the same enqueues made one after another: a repeated id is
// the first job, a second job under a held unique lock is refused, and a job that meets an
// error reply fails alone while the rest of its batch is stored.
func TestExecEnqueues_ABatchIsItsJobsInOrder(t *testing.T) {
	redistest.RunOnTopologies(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := context.Background()
		b, err := New(c, Options{Namespace: "tbatch-" + time.Now().Format("150405.000000") + "-"})
		if err != nil {
			t.Fatal(err)
		}
		const q = "batched"
		now := time.Now()
		req := func(id string, opts queue.JobOptions) enqueueReq {
			t.Helper()
			opts.ID = id
			r, err := queue.NewJobRequest(now, json.RawMessage(`{"n":1}`), opts)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := queue.PrepareJob(q, r)
			if err != nil {
				t.Fatal(err)
			}
			return enqueueReq{name: q, req: r, raw: string(raw)}
		}
		// A foreign value where job "broken"'s record belongs: its HGETALL meets WRONGTYPE.
		if err := c.RPush(ctx, b.keys(q).Job("broken"), "x").Err(); err != nil {
			t.Fatal(err)
		}
		unique := queue.JobOptions{UniqueFor: time.Minute}
		reqs := []enqueueReq{
			req("a", queue.JobOptions{}),
			req("broken", queue.JobOptions{}),
			req("a", queue.JobOptions{}),
			req("", unique), // no id: the lock is on the payload's hash
			req("", unique), // the same payload: its lock is held
			req("b", queue.JobOptions{Delay: time.Hour}),
		}
		reqs[5].due = formatInt(now.Add(time.Hour).UnixMilli())
		outs := b.execEnqueues(ctx, reqs)
		want := []string{"NEW", "", "OLD", "NEW", "UNIQUE", "NEW"}
		for i, o := range outs {
			got := ""
			if o.Err == nil && len(o.Value.reply) > 0 {
				got = o.Value.reply[0]
			}
			if got != want[i] {
				t.Errorf("job %d (%s): reply %q, err %v; want %q", i, reqs[i].req.Message.JobID, o.Value.reply, o.Err, want[i])
			}
		}
		if code := redstate.ErrorCode(outs[1].Err); code != redstate.EINTERNAL {
			t.Errorf("the job that met WRONGTYPE: %v (code %q), want an internal error of its own", outs[1].Err, code)
		}
		u1 := reqs[3].req.Message.JobID
		if got := outs[4].Value.reply; len(got) != 2 || got[1] != u1 {
			t.Errorf("the refused unique job names holder %q, want %s", got, u1)
		}
		st, err := b.Stats(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if st.Pending != 2 || st.Scheduled != 1 {
			t.Errorf("stored pending %d scheduled %d, want 2 (a, u1) and 1 (b)", st.Pending, st.Scheduled)
		}
		for state, ids := range map[queue.JobState][]string{queue.StatePending: {"a", u1}, queue.StateScheduled: {"b"}} {
			jobs, _, err := b.Jobs(ctx, q, state, "", 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(jobs) != len(ids) || jobs[0].ID != ids[0] && jobs[len(jobs)-1].ID != ids[0] {
				t.Errorf("%s jobs %v, want %v", state, jobs, ids)
			}
		}
	})
}

// A batch of pushes is the same pushes made one after another: a job id twice is pushed once,
// messages without an id are each pushed, all in arrival order; a copy of the script call
// (go-redis sending it again) pushes nothing.
func TestPushScript_ABatchIsItsPushesInOrderAndItsCopyPushesNothing(t *testing.T) {
	redistest.RunOnTopologies(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := context.Background()
		b, err := New(c, Options{Namespace: "tpush-" + time.Now().Format("150405.000000") + "-"})
		if err != nil {
			t.Fatal(err)
		}
		const q = "pushed"
		k := b.keys(q)
		reqs := []pushReq{
			{name: q, mark: k.Enqueued("a"), raw: "a1"},
			{name: q, raw: "x"},
			{name: q, mark: k.Enqueued("a"), raw: "a2"},
			{name: q, raw: "y"},
		}
		for i, o := range b.execPushes(ctx, reqs) {
			if o.Err != nil {
				t.Fatalf("push %d: %v", i, o.Err)
			}
		}
		// Consumers take the right end: the oldest push first.
		if got, _ := c.LRange(ctx, k.Pending, 0, -1).Result(); len(got) != 3 || got[2] != "a1" || got[1] != "x" || got[0] != "y" {
			t.Fatalf("pending (left to right) %q, want [y x a1]", got)
		}
		call := k.Once("copy-token")
		keys, args := []string{k.Pending, call, call}, []any{int64(60000), "z"}
		for copyNo, want := range []int64{1, 0} {
			res, err := pushScript.Run(ctx, c, keys, args...).Int64Slice()
			if err != nil || len(res) != 1 || res[0] != want {
				t.Fatalf("call %d of the same pushScript: %v, %v; want [%d]", copyNo+1, res, err, want)
			}
		}
		if n, _ := c.LLen(ctx, k.Pending).Result(); n != 4 {
			t.Fatalf("pending holds %d after a call and its copy, want 4", n)
		}
	})
}
