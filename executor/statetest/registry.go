package statetest

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/executor"
)

// NewRegistry returns an empty, isolated TaskRegistry whose specs live ttl.
type NewRegistry func(t *testing.T, ttl time.Duration) executor.TaskRegistry

// fullSpec returns a spec with every field set.
func fullSpec(taskID string) executor.TaskSpec {
	return executor.TaskSpec{
		TaskID:      taskID,
		TenantID:    newID("tenant"),
		PlanID:      newID("plan"),
		Stages:      []string{"stage-0", "stage-1", "stage 2 (free text)"},
		Handler:     "webhook.provision",
		ContextData: map[string]string{"customKey": "customValue", "empty": "", "unicode": "é✓"},
		Retry:       executor.RetryPolicy{MaxAttempts: 5, Backoff: 250 * time.Millisecond, MaxBackoff: 30 * time.Second},
		Reason:      "interrupted: holder died",
		Attempts:    2,
		CreatedAt:   time.Date(2025, 11, 24, 10, 30, 0, 123456789, time.UTC),
	}
}

// cloneSpec returns a deep copy of s.
func cloneSpec(s executor.TaskSpec) executor.TaskSpec {
	s.Stages = slices.Clone(s.Stages)
	s.ContextData = maps.Clone(s.ContextData)
	return s
}

// sameSpec fails t unless got equals want field by field (times with Equal).
func sameSpec(t *testing.T, what string, got, want executor.TaskSpec) {
	t.Helper()
	if !got.CreatedAt.Equal(want.CreatedAt) {
		t.Fatalf("%s: CreatedAt = %v, want %v", what, got.CreatedAt, want.CreatedAt)
	}
	got.CreatedAt, want.CreatedAt = time.Time{}, time.Time{}
	if len(got.ContextData) == 0 && len(want.ContextData) == 0 {
		got.ContextData, want.ContextData = nil, nil
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

// running returns the running set sorted.
func running(t *testing.T, r executor.TaskRegistry) []string {
	t.Helper()
	ids, err := r.RunningTasks(t.Context())
	must(t, err, "RunningTasks")
	ids = slices.Clone(ids)
	slices.Sort(ids)
	return ids
}

// wantRunning fails t unless the running set is exactly want (any order).
func wantRunning(t *testing.T, r executor.TaskRegistry, what string, want ...string) {
	t.Helper()
	want = slices.Clone(want)
	slices.Sort(want)
	if got := running(t, r); !slices.Equal(got, want) {
		t.Fatalf("%s: running set = %q, want %q", what, got, want)
	}
}

// RunRegistrySuite checks the executor.TaskRegistry contract: specs are stored whole and
// replaced by a later PutSpec, live the store's TTL (refreshed by every PutSpec) and are
// ENOTFOUND after it; the running set is a set (idempotent add and remove, no TTL, independent
// of the specs); bad ids and incomplete specs are EINVALID and store nothing; stores returned by
// separate constructor calls share nothing.
func RunRegistrySuite(t *testing.T, newRegistry NewRegistry, _ Features) {
	registry := func(t *testing.T) executor.TaskRegistry { return newRegistry(t, time.Hour) }
	runAll(t, []namedTest{
		{"SpecPutGetRoundTrip", func(t *testing.T) {
			r, ctx, task := registry(t), t.Context(), newID("task")
			_, err := r.GetSpec(ctx, task)
			wantCode(t, err, redstate.ENOTFOUND, "GetSpec missing")
			spec := fullSpec(task)
			must(t, r.PutSpec(ctx, spec), "PutSpec")
			got, err := r.GetSpec(ctx, task)
			must(t, err, "GetSpec")
			sameSpec(t, "GetSpec after PutSpec", got, cloneSpec(spec))
		}},
		{"SpecMinimal", func(t *testing.T) {
			r, ctx, task := registry(t), t.Context(), newID("task")
			spec := executor.TaskSpec{TaskID: task, TenantID: "tenant-1", Stages: []string{"only"}, Handler: "h"}
			must(t, r.PutSpec(ctx, spec), "PutSpec without plan, context, retry, time")
			got, err := r.GetSpec(ctx, task)
			must(t, err, "GetSpec")
			sameSpec(t, "minimal spec", got, spec)
		}},
		{"SpecIsACopy", func(t *testing.T) {
			r, ctx, task := registry(t), t.Context(), newID("task")
			spec := fullSpec(task)
			want := cloneSpec(spec)
			must(t, r.PutSpec(ctx, spec), "PutSpec")
			// Neither the caller's value after PutSpec nor a value GetSpec returned may alias
			// the stored spec.
			spec.Stages[0] = "mutated"
			spec.ContextData["customKey"] = "mutated"
			got, err := r.GetSpec(ctx, task)
			must(t, err, "GetSpec")
			got.Stages[1] = "mutated"
			got.ContextData["new"] = "mutated"
			again, err := r.GetSpec(ctx, task)
			must(t, err, "GetSpec again")
			sameSpec(t, "stored spec after callers mutated theirs", again, want)
		}},
		{"SpecReplace", func(t *testing.T) {
			r, ctx, task := registry(t), t.Context(), newID("task")
			first := fullSpec(task)
			must(t, r.PutSpec(ctx, first), "PutSpec")
			second := first
			second.Stages = []string{"a", "b"}
			second.ContextData = nil
			second.Reason = ""
			second.Attempts = 0
			second.Retry = executor.RetryPolicy{MaxAttempts: 1}
			must(t, r.PutSpec(ctx, second), "PutSpec replace")
			got, err := r.GetSpec(ctx, task)
			must(t, err, "GetSpec")
			sameSpec(t, "replaced spec", got, second)
		}},
		{"SpecsPerTask", func(t *testing.T) {
			r, ctx := registry(t), t.Context()
			a, b := fullSpec(newID("task")), fullSpec(newID("task"))
			b.Handler = "other"
			must(t, r.PutSpec(ctx, a), "PutSpec a")
			must(t, r.PutSpec(ctx, b), "PutSpec b")
			for _, want := range []executor.TaskSpec{a, b} {
				got, err := r.GetSpec(ctx, want.TaskID)
				must(t, err, "GetSpec "+want.TaskID)
				sameSpec(t, "spec "+want.TaskID, got, want)
			}
		}},
		{"EdgeIDs", func(t *testing.T) {
			r, ctx := registry(t), t.Context()
			// Every allowed character class, and the longest allowed id.
			long := strings.Repeat("x", executor.MaxIDLength-len("long-"))
			for _, id := range []string{"A.b_c:d-9", "long-" + long, "running", "spec:x", "x:running"} {
				spec := fullSpec(id)
				spec.TenantID, spec.PlanID = id, id
				must(t, r.PutSpec(ctx, spec), "PutSpec "+id)
				got, err := r.GetSpec(ctx, id)
				must(t, err, "GetSpec "+id)
				sameSpec(t, "spec "+id, got, spec)
				must(t, r.MarkRunning(ctx, id), "MarkRunning "+id)
			}
			wantRunning(t, r, "edge ids", "A.b_c:d-9", "long-"+long, "running", "spec:x", "x:running")
		}},
		{"SpecTTL", func(t *testing.T) {
			r, ctx, task := newRegistry(t, shortTTL), t.Context(), newID("task")
			must(t, r.PutSpec(ctx, fullSpec(task)), "PutSpec")
			if _, err := r.GetSpec(ctx, task); err != nil {
				t.Fatalf("GetSpec right after PutSpec: %v", err)
			}
			eventually(t, "spec expiry", func() bool {
				_, err := r.GetSpec(ctx, task)
				return redstate.IsCode(err, redstate.ENOTFOUND)
			})
			// An expired spec can be stored again.
			must(t, r.PutSpec(ctx, fullSpec(task)), "PutSpec after expiry")
			if _, err := r.GetSpec(ctx, task); err != nil {
				t.Fatalf("GetSpec after re-put: %v", err)
			}
		}},
		{"SpecTTLRefreshedByPut", func(t *testing.T) {
			const ttl = 1500 * time.Millisecond
			r, ctx, task := newRegistry(t, ttl), t.Context(), newID("task")
			must(t, r.PutSpec(ctx, fullSpec(task)), "PutSpec")
			firstDone := time.Now() // the first TTL ends by firstDone+ttl
			time.Sleep(ttl / 2)
			refreshSent := time.Now() // the refreshed TTL ends no earlier than refreshSent+ttl
			must(t, r.PutSpec(ctx, fullSpec(task)), "PutSpec refresh")
			time.Sleep(time.Until(firstDone.Add(ttl + ttl/10)))
			_, err := r.GetSpec(ctx, task)
			if time.Since(refreshSent) < ttl-ttl/10 { // skip the check if this goroutine was starved
				must(t, err, "GetSpec after the first TTL, inside the refreshed one")
			}
			eventually(t, "refreshed spec expiry", func() bool {
				_, err := r.GetSpec(ctx, task)
				return redstate.IsCode(err, redstate.ENOTFOUND)
			})
		}},
		{"RunningSet", func(t *testing.T) {
			r, ctx := registry(t), t.Context()
			ids, err := r.RunningTasks(ctx)
			must(t, err, "RunningTasks empty")
			if len(ids) != 0 {
				t.Fatalf("new registry has running tasks %q", ids)
			}
			a, b, c := newID("task"), newID("task"), newID("task")
			for _, id := range []string{a, b, c, a} {
				must(t, r.MarkRunning(ctx, id), "MarkRunning "+id)
			}
			wantRunning(t, r, "after marks (a twice)", a, b, c)
			must(t, r.ClearRunning(ctx, b), "ClearRunning b")
			must(t, r.ClearRunning(ctx, b), "ClearRunning b again")
			must(t, r.ClearRunning(ctx, newID("task")), "ClearRunning never marked")
			wantRunning(t, r, "after clearing b", a, c)
			must(t, r.MarkRunning(ctx, b), "MarkRunning b again")
			wantRunning(t, r, "after re-marking b", a, b, c)
			for _, id := range []string{a, b, c} {
				must(t, r.ClearRunning(ctx, id), "ClearRunning "+id)
			}
			wantRunning(t, r, "after clearing all")
		}},
		{"RunningIndependentOfSpecs", func(t *testing.T) {
			r, ctx := newRegistry(t, shortTTL), t.Context()
			withSpec, without := newID("task"), newID("task")
			must(t, r.PutSpec(ctx, fullSpec(withSpec)), "PutSpec")
			must(t, r.MarkRunning(ctx, withSpec), "MarkRunning with spec")
			must(t, r.MarkRunning(ctx, without), "MarkRunning without spec")
			// The running set does not expire with the specs (Redis bounds it by the fixed
			// projection TTL after the last start, not by the store's spec TTL).
			eventually(t, "spec expiry", func() bool {
				_, err := r.GetSpec(ctx, withSpec)
				return redstate.IsCode(err, redstate.ENOTFOUND)
			})
			time.Sleep(shortTTL)
			wantRunning(t, r, "after the spec TTL", withSpec, without)
			// Clearing the running entry leaves a spec alone.
			other := newID("task")
			must(t, r.PutSpec(ctx, fullSpec(other)), "PutSpec other")
			must(t, r.MarkRunning(ctx, other), "MarkRunning other")
			must(t, r.ClearRunning(ctx, other), "ClearRunning other")
			if _, err := r.GetSpec(ctx, other); err != nil {
				t.Fatalf("GetSpec after ClearRunning: %v", err)
			}
			wantRunning(t, r, "after clearing other", withSpec, without)
		}},
		{"Invalid", func(t *testing.T) {
			r, ctx := registry(t), t.Context()
			for _, bad := range badIDs {
				spec := fullSpec(newID("task"))
				spec.TaskID = bad
				wantCode(t, r.PutSpec(ctx, spec), redstate.EINVALID, fmt.Sprintf("PutSpec taskId %q", bad))
				spec = fullSpec(newID("task"))
				spec.TenantID = bad
				wantCode(t, r.PutSpec(ctx, spec), redstate.EINVALID, fmt.Sprintf("PutSpec tenantId %q", bad))
				if bad != "" { // an empty plan id means "no plan"
					spec = fullSpec(newID("task"))
					spec.PlanID = bad
					wantCode(t, r.PutSpec(ctx, spec), redstate.EINVALID, fmt.Sprintf("PutSpec planId %q", bad))
				}
				_, err := r.GetSpec(ctx, bad)
				wantCode(t, err, redstate.EINVALID, fmt.Sprintf("GetSpec %q", bad))
				wantCode(t, r.MarkRunning(ctx, bad), redstate.EINVALID, fmt.Sprintf("MarkRunning %q", bad))
				wantCode(t, r.ClearRunning(ctx, bad), redstate.EINVALID, fmt.Sprintf("ClearRunning %q", bad))
			}
			noStages := fullSpec(newID("task"))
			noStages.Stages = nil
			wantCode(t, r.PutSpec(ctx, noStages), redstate.EINVALID, "PutSpec without stages")
			_, err := r.GetSpec(ctx, noStages.TaskID)
			wantCode(t, err, redstate.ENOTFOUND, "GetSpec of the rejected spec")
			noHandler := fullSpec(newID("task"))
			noHandler.Handler = ""
			wantCode(t, r.PutSpec(ctx, noHandler), redstate.EINVALID, "PutSpec without handler")
			_, err = r.GetSpec(ctx, noHandler.TaskID)
			wantCode(t, err, redstate.ENOTFOUND, "GetSpec of the rejected spec")
			// A valid task with an invalid tenant stores nothing either.
			badTenant := fullSpec(newID("task"))
			badTenant.TenantID = "bad tenant"
			wantCode(t, r.PutSpec(ctx, badTenant), redstate.EINVALID, "PutSpec bad tenant")
			_, err = r.GetSpec(ctx, badTenant.TaskID)
			wantCode(t, err, redstate.ENOTFOUND, "GetSpec of the rejected spec")
			wantRunning(t, r, "after invalid calls")
		}},
		{"Isolation", func(t *testing.T) {
			r1, r2, ctx, task := registry(t), registry(t), t.Context(), newID("task")
			must(t, r1.PutSpec(ctx, fullSpec(task)), "PutSpec r1")
			must(t, r1.MarkRunning(ctx, task), "MarkRunning r1")
			_, err := r2.GetSpec(ctx, task)
			wantCode(t, err, redstate.ENOTFOUND, "GetSpec on the other registry")
			wantRunning(t, r2, "other registry")
			other := fullSpec(task)
			other.Handler = "other-handler"
			must(t, r2.PutSpec(ctx, other), "PutSpec r2")
			must(t, r2.MarkRunning(ctx, newID("task")), "MarkRunning r2")
			must(t, r2.ClearRunning(ctx, task), "ClearRunning r2")
			got, err := r1.GetSpec(ctx, task)
			must(t, err, "GetSpec r1")
			if got.Handler != "webhook.provision" {
				t.Fatalf("r2's PutSpec changed r1's spec: handler %q", got.Handler)
			}
			wantRunning(t, r1, "r1 after r2 cleared the same id", task)
		}},
		{"ClaimIDsAllOrNone", func(t *testing.T) {
			r, ctx := registry(t), t.Context()
			plan, a, b, c := newID("plan"), newID("task"), newID("task"), newID("task")
			must(t, r.ClaimIDs(ctx, plan, []string{a, b}), "first claim")
			err := r.ClaimIDs(ctx, newID("plan"), []string{c, b})
			wantCode(t, err, redstate.ECONFLICT, "claim reusing task b")
			if !strings.Contains(err.Error(), b) {
				t.Fatalf("conflict %v does not name the reused task %s", err, b)
			}
			// c was not kept by the refused claim.
			must(t, r.ClaimIDs(ctx, newID("plan"), []string{c}), "claim of c after the refused claim")
			wantCode(t, r.ClaimIDs(ctx, plan, []string{newID("task")}), redstate.ECONFLICT, "claim reusing the plan id")
			d := newID("task")
			wantCode(t, r.ClaimIDs(ctx, newID("plan"), []string{d, d}), redstate.ECONFLICT, "one task id twice in a plan")
			wantCode(t, r.ClaimIDs(ctx, "bad id{", nil), redstate.EINVALID, "bad plan id")
			wantCode(t, r.ClaimIDs(ctx, newID("plan"), []string{"bad*"}), redstate.EINVALID, "bad task id")
		}},
		{"OwnersAndLiveness", func(t *testing.T) {
			r, ctx, task := registry(t), t.Context(), newID("task")
			owner, err := r.Owner(ctx, task)
			if err != nil || owner != "" {
				t.Fatalf("owner of an unknown task = %q, %v", owner, err)
			}
			must(t, r.SetOwner(ctx, task, "instance-1"), "SetOwner")
			must(t, r.MarkRunning(ctx, task), "MarkRunning")
			if owner, _ = r.Owner(ctx, task); owner != "instance-1" {
				t.Fatalf("owner = %q", owner)
			}
			must(t, r.ClearRunning(ctx, task), "ClearRunning")
			if owner, _ = r.Owner(ctx, task); owner != "" {
				t.Fatalf("owner after ClearRunning = %q", owner)
			}
			inst := newID("instance")
			if alive, err := r.Alive(ctx, inst); err != nil || alive {
				t.Fatalf("never seen instance alive = %v, %v", alive, err)
			}
			must(t, r.Heartbeat(ctx, inst, 150*time.Millisecond), "Heartbeat")
			if alive, _ := r.Alive(ctx, inst); !alive {
				t.Fatal("not alive right after its heartbeat")
			}
			deadline := time.Now().Add(30 * time.Second)
			for alive, _ := r.Alive(ctx, inst); alive; alive, _ = r.Alive(ctx, inst) {
				if time.Now().After(deadline) {
					t.Fatal("liveness never expired")
				}
				time.Sleep(20 * time.Millisecond)
			}
			wantCode(t, r.Heartbeat(ctx, "bad{", time.Second), redstate.EINVALID, "bad instance")
			wantCode(t, r.SetOwner(ctx, task, "bad*"), redstate.EINVALID, "bad owner")
		}},
		{"ControlInbox", func(t *testing.T) {
			r, ctx, inst := registry(t), t.Context(), newID("instance")
			cmds, err := r.TakeControls(ctx, inst)
			if err != nil || len(cmds) != 0 {
				t.Fatalf("empty inbox = %v, %v", cmds, err)
			}
			at := time.Now().UTC().Truncate(time.Millisecond)
			must(t, r.SendControl(ctx, inst, executor.ControlCommand{TaskID: "t1", Action: executor.ControlPause, SentAt: at}), "send pause")
			must(t, r.SendControl(ctx, inst, executor.ControlCommand{TaskID: "t2", Action: executor.ControlCancel, SentAt: at}), "send cancel")
			must(t, r.SendControl(ctx, newID("instance"), executor.ControlCommand{TaskID: "t3", Action: executor.ControlResume, SentAt: at}), "send elsewhere")
			cmds, err = r.TakeControls(ctx, inst)
			must(t, err, "take")
			if len(cmds) != 2 || cmds[0].TaskID != "t1" || cmds[0].Action != executor.ControlPause || cmds[1].TaskID != "t2" || !cmds[0].SentAt.Equal(at) {
				t.Fatalf("taken = %+v", cmds)
			}
			if cmds, _ = r.TakeControls(ctx, inst); len(cmds) != 0 {
				t.Fatalf("commands taken twice: %+v", cmds)
			}
			wantCode(t, r.SendControl(ctx, inst, executor.ControlCommand{TaskID: "t1", Action: "explode"}), redstate.EINVALID, "unknown action")
		}},
		{"ClaimIDsConcurrentOneWins", func(t *testing.T) {
			r, ctx := registry(t), t.Context()
			task := newID("task")
			var wg sync.WaitGroup
			var wins, conflicts atomic.Int64
			for range 20 {
				wg.Go(func() {
					switch err := r.ClaimIDs(ctx, newID("plan"), []string{task}); {
					case err == nil:
						wins.Add(1)
					case redstate.IsCode(err, redstate.ECONFLICT):
						conflicts.Add(1)
					default:
						t.Errorf("claim: %v", err)
					}
				})
			}
			wg.Wait()
			if wins.Load() != 1 || conflicts.Load() != 19 {
				t.Fatalf("%d claims of one task id won, %d conflicted; want 1 and 19", wins.Load(), conflicts.Load())
			}
		}},
		{"Concurrent", func(t *testing.T) {
			r, ctx := registry(t), t.Context()
			const workers, per = 8, 25
			prefix := newID("conc")
			var wg sync.WaitGroup
			errs := make(chan error, workers*per*4)
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range per {
						id := fmt.Sprintf("%s-w%d-%d", prefix, w, i)
						spec := fullSpec(id)
						spec.Attempts = i
						errs <- r.PutSpec(ctx, spec)
						errs <- r.MarkRunning(ctx, id)
						if i%2 == 1 {
							errs <- r.ClearRunning(ctx, id)
						}
						if _, err := r.GetSpec(ctx, id); err != nil {
							errs <- err
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				must(t, err, "concurrent call")
			}
			var want []string
			for w := range workers {
				for i := 0; i < per; i += 2 {
					want = append(want, fmt.Sprintf("%s-w%d-%d", prefix, w, i))
				}
			}
			wantRunning(t, r, "after concurrent marks and clears", want...)
			got, err := r.GetSpec(ctx, fmt.Sprintf("%s-w3-7", prefix))
			must(t, err, "GetSpec")
			if got.Attempts != 7 {
				t.Fatalf("spec w3-7 has attempts %d", got.Attempts)
			}
		}},
	})
}
