package redisstate_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/executor"
	"github.com/redstate/redstate/executor/redisstate"
	"github.com/redstate/redstate/redistest"
)

// The tests of this file stall Redis longer than the client's read timeout while one write is on
// its way, so that go-redis sends it again and both copies run when Redis continues
// (redistest.RunStalled); each asserts the write's effect and answer, then that the copy was
// sent (the count of the commands clients sent during the stall).

// stalledServer returns a server that RunStalled can stall and its re-sending client.
func stalledServer(t *testing.T) (*redistest.Server, *redis.Client) {
	t.Helper()
	srv := redistest.StartStandalone(t)
	return srv, srv.ResendClient(t)
}

// anyOf is the stall's trigger: the first command of one of these names.
func anyOf(names ...string) func(redis.Cmder) bool {
	return func(c redis.Cmder) bool { return slices.Contains(names, c.Name()) }
}

// wantResent fails unless clients sent want commands during the stall (the calls and copies).
func wantResent(t *testing.T, runs, want int) {
	t.Helper()
	if runs != want {
		t.Fatalf("clients sent %d write commands during the stall, want %d (the calls and the client's copies)", runs, want)
	}
}

// TestResend_LockAcquireGetsTheLock: the copy of an acquisition found the lock held (by the
// first copy, with this very token) and answered "held": the task did not run and its tenant
// stayed locked by nobody's lease until the TTL. Now the copy answers with the first's fence.
func TestResend_LockAcquireGetsTheLock(t *testing.T) {
	modes := map[string]func(*redisstate.Options){
		"Streamed": func(*redisstate.Options) {},
		"Batched":  func(o *redisstate.Options) { o.BatchedLocks = true },
		"Direct":   func(o *redisstate.Options) { o.DirectLocks = true },
	}
	for name, mode := range modes {
		t.Run(name, func(t *testing.T) {
			srv, c := stalledServer(t)
			o := opts(time.Minute)
			mode(&o)
			l := must(redisstate.NewLocks(c, o))(t)
			ctx := context.Background()
			warm := must2(l.TryAcquire(ctx, "tenant-0", "warm", time.Minute))(t)
			var lease executor.Lease
			var ok bool
			var err error
			runs := srv.RunStalled(t, anyOf("evalsha"), func() { lease, ok, err = l.TryAcquire(ctx, "tenant-1", "owner", time.Minute) }, "evalsha")
			if err != nil || !ok {
				t.Fatalf("TryAcquire = %v, %v; want the lock", ok, err)
			}
			if holder := must(l.Holder(ctx, "tenant-1"))(t); holder != lease.Token || lease.Fence <= warm.Fence {
				t.Fatalf("holder %q fence %d, want %q with a fence above %d", holder, lease.Fence, lease.Token, warm.Fence)
			}
			if name == "Streamed" && runs == 1 {
				return // the full-duplex stream waited for the reply instead of sending a copy
			}
			wantResent(t, runs, 2)
		})
	}
}

// must2 is must for the lock's (lease, ok, error) answer: it fails unless ok.
func must2(lease executor.Lease, ok bool, err error) func(t *testing.T) executor.Lease {
	return func(t *testing.T) executor.Lease {
		t.Helper()
		if err != nil || !ok {
			t.Fatalf("TryAcquire = %v, %v", ok, err)
		}
		return lease
	}
}

// TestResend_LockReleaseIsHarmless: the copy of a release finds the lock gone and answers
// ECONFLICT ("not held"), which every caller of Release takes as released; the lock is free.
func TestResend_LockReleaseIsHarmless(t *testing.T) {
	srv, c := stalledServer(t)
	o := opts(time.Minute)
	o.DirectLocks = true
	l := must(redisstate.NewLocks(c, o))(t)
	ctx := context.Background()
	lease := must2(l.TryAcquire(ctx, "tenant-1", "owner", time.Minute))(t)
	var err error
	runs := srv.RunStalled(t, anyOf("evalsha"), func() { err = l.Release(ctx, "tenant-1", lease.Token) }, "evalsha")
	if err != nil && !redstate.IsCode(err, redstate.ECONFLICT) {
		t.Fatalf("Release: %v", err)
	}
	if held := must(l.Exists(ctx, "tenant-1"))(t); held {
		t.Fatal("the lock is still held")
	}
	wantResent(t, runs, 2)
}

// TestResend_CheckpointPutIsItsOwn: the copy of a checkpoint write found the version the first
// copy had written and answered PRECONDITION, which a runner takes for another writer. Now it
// recognises its own write.
func TestResend_CheckpointPutIsItsOwn(t *testing.T) {
	srv, c := stalledServer(t)
	s := must(redisstate.NewCheckpoints(c, opts(time.Hour)))(t)
	ctx := context.Background()
	v1 := must(s.Put(ctx, "task-1", executor.Checkpoint{LastCompletedStageIndex: 0}, 0))(t)
	var v2 int64
	var err error
	runs := srv.RunStalled(t, anyOf("evalsha"), func() { v2, err = s.Put(ctx, "task-1", executor.Checkpoint{LastCompletedStageIndex: 1}, v1) }, "evalsha")
	if err != nil || v2 != v1+1 {
		t.Fatalf("Put = %d, %v; want version %d", v2, err, v1+1)
	}
	if cp := must(s.Get(ctx, "task-1"))(t); cp.Version != v2 || cp.LastCompletedStageIndex != 1 {
		t.Fatalf("stored %+v", cp)
	}
	// Creating one is recognised too.
	runs2 := srv.RunStalled(t, anyOf("evalsha"), func() { v2, err = s.Put(ctx, "task-2", executor.Checkpoint{LastCompletedStageIndex: 0}, 0) }, "evalsha")
	if err != nil || v2 == 0 {
		t.Fatalf("Put of a new checkpoint = %d, %v", v2, err)
	}
	wantResent(t, runs, 2)
	wantResent(t, runs2, 2)
}

// TestResend_ClaimIDsKeepsItsClaims: the copy of the claims pipeline found every id taken (by
// the first copy, with this call's token) and answered ECONFLICT, leaving the ids claimed by
// nobody until their TTL. Now the claims are the call's own.
func TestResend_ClaimIDsKeepsItsClaims(t *testing.T) {
	srv, c := stalledServer(t)
	r := must(redisstate.NewRegistry(c, opts(time.Hour)))(t)
	ctx := context.Background()
	if err := r.ClaimIDs(ctx, "plan-0", []string{"t0"}); err != nil {
		t.Fatal(err)
	}
	var err error
	runs := srv.RunStalled(t, anyOf("set"), func() { err = r.ClaimIDs(ctx, "plan-1", []string{"t1", "t2"}) }, "set")
	if err != nil {
		t.Fatalf("ClaimIDs: %v", err)
	}
	if err := r.ClaimIDs(ctx, "plan-2", []string{"t2"}); !redstate.IsCode(err, redstate.ECONFLICT) {
		t.Fatalf("a second claim of t2: %v, want ECONFLICT", err)
	}
	wantResent(t, runs, 6)
}

// TestResend_ControlSentOnce: sending a control command (RPUSH in a MULTI, which go-redis
// does not re-send) failed with the stall although the command was queued, and the caller's
// retry queued it twice. Now it is a script that go-redis re-sends and whose copy answers as
// the first: one command, no error.
func TestResend_ControlSentOnce(t *testing.T) {
	srv, c := stalledServer(t)
	r := must(redisstate.NewRegistry(c, opts(time.Hour)))(t)
	ctx := context.Background()
	pause := executor.ControlCommand{TaskID: "task-1", Action: executor.ControlPause, SentAt: time.Now().UTC().Truncate(time.Second)}
	if err := r.SendControl(ctx, "runner-0", pause); err != nil { // loads the script
		t.Fatal(err)
	}
	var err error
	runs := srv.RunStalled(t, anyOf("evalsha", "multi"), func() { err = r.SendControl(ctx, "runner-1", pause) }, "evalsha", "multi")
	if err != nil {
		t.Fatalf("SendControl: %v", err)
	}
	if cmds := must(r.TakeControls(ctx, "runner-1"))(t); len(cmds) != 1 {
		t.Fatalf("inbox %v, want the one command", cmds)
	}
	wantResent(t, runs, 2)
}

// TestResend_ControlsTakenAreReturned: taking the inbox (read and delete in one MULTI, not
// re-sent) lost its answer with the stall: the commands were deleted and never applied. Now
// the copy go-redis sends returns them.
func TestResend_ControlsTakenAreReturned(t *testing.T) {
	srv, c := stalledServer(t)
	r := must(redisstate.NewRegistry(c, opts(time.Hour)))(t)
	ctx := context.Background()
	pause := executor.ControlCommand{TaskID: "task-1", Action: executor.ControlPause, SentAt: time.Now().UTC().Truncate(time.Second)}
	for _, task := range []string{"task-1", "task-2"} {
		pause.TaskID = task
		if err := r.SendControl(ctx, "runner-1", pause); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.TakeControls(ctx, "runner-0"); err != nil { // loads the script
		t.Fatal(err)
	}
	var cmds []executor.ControlCommand
	var err error
	runs := srv.RunStalled(t, anyOf("evalsha", "multi"), func() { cmds, err = r.TakeControls(ctx, "runner-1") }, "evalsha", "multi")
	if err != nil || len(cmds) != 2 {
		t.Fatalf("TakeControls = %v, %v; want the 2 commands sent", cmds, err)
	}
	if left := must(r.TakeControls(ctx, "runner-1"))(t); len(left) != 0 {
		t.Fatalf("the inbox still holds %v", left)
	}
	wantResent(t, runs, 2)
}
