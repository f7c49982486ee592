package executor_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/executor"
)

// TestTaskStatus_ActionsAreWhatTheRunnerAccepts: for a task in each status, the actions its
// status document lists are exactly the controls that do something: the runner accepts them,
// and answers the others ECONFLICT (or, for a pause already requested, accepts it and changes
// nothing). So the dashboard never offers Pause on a FAILED task, nor hides a control that works.
func TestTaskStatus_ActionsAreWhatTheRunnerAccepts(t *testing.T) {
	ctx := context.Background()
	// Each scenario brings a fresh task "t" of plan "p" into a status and returns a cleanup.
	scenarios := map[string]func(t *testing.T, r *executor.Runner, c *counter) func(){
		"FAILED": func(t *testing.T, r *executor.Runner, c *counter) func() {
			c.fail["t/s1"] = 1
			create(t, r, true)
			waitStatus(t, r, "t", executor.TaskFailed)
			return func() {}
		},
		"PAUSED": func(t *testing.T, r *executor.Runner, c *counter) func() {
			create(t, r, false)
			if err := r.Pause(ctx, "t"); err != nil {
				t.Fatal(err)
			}
			waitStatus(t, r, "t", executor.TaskPaused)
			return func() {}
		},
		"COMPLETED": func(t *testing.T, r *executor.Runner, c *counter) func() {
			create(t, r, true)
			waitStatus(t, r, "t", executor.TaskCompleted)
			return func() {}
		},
		"CANCELLED": func(t *testing.T, r *executor.Runner, c *counter) func() {
			create(t, r, false)
			if err := r.Cancel(ctx, "t"); err != nil {
				t.Fatal(err)
			}
			waitStatus(t, r, "t", executor.TaskCancelled)
			return func() {}
		},
		"RUNNING": func(t *testing.T, r *executor.Runner, c *counter) func() {
			gate := make(chan struct{})
			c.block["t/s1"] = gate
			create(t, r, true)
			for c.count("t/s1") == 0 {
				time.Sleep(time.Millisecond)
			}
			return func() { close(gate) }
		},
		"RUNNING, pause requested": func(t *testing.T, r *executor.Runner, c *counter) func() {
			gate := make(chan struct{})
			c.block["t/s1"] = gate
			create(t, r, true)
			for c.count("t/s1") == 0 {
				time.Sleep(time.Millisecond)
			}
			if err := r.Pause(ctx, "t"); err != nil {
				t.Fatal(err)
			}
			return func() { close(gate) }
		},
	}
	calls := map[string]func(r *executor.Runner) error{
		executor.ControlPause:  func(r *executor.Runner) error { return r.Pause(ctx, "t") },
		executor.ControlResume: func(r *executor.Runner) error { return r.Resume(ctx, "t") },
		executor.ControlCancel: func(r *executor.Runner) error { return r.Cancel(ctx, "t") },
		executor.ControlRetry:  func(r *executor.Runner) error { return r.Retry(ctx, "t", true) },
	}
	for name, setup := range scenarios {
		for action, call := range calls {
			t.Run(fmt.Sprintf("%s/%s", name, action), func(t *testing.T) {
				st := newMemStores()
				r := newRunner(t, st.Stores)
				c := newCounter()
				r.Handle("h", c.handler)
				done := setup(t, r, c)
				defer done()
				info, err := r.TaskStatus(ctx, "t")
				if err != nil {
					t.Fatal(err)
				}
				listed := slices.Contains(info.Actions, action)
				err = call(r)
				if listed && err != nil {
					t.Fatalf("status %s lists %v, but %s failed: %v", info.Status, info.Actions, action, err)
				}
				if listed || redstate.IsCode(err, redstate.ECONFLICT) {
					return
				}
				after, aerr := r.TaskStatus(ctx, "t")
				if err != nil || aerr != nil || after.Status != info.Status || after.PauseRequested != info.PauseRequested {
					t.Fatalf("status %s lists %v without %s, but %s answered %v and changed the task to %s (pause requested %v), want ECONFLICT or no change",
						info.Status, info.Actions, action, action, err, after.Status, after.PauseRequested)
				}
			})
		}
	}
}

// create creates plan "p" with task "t" of tenant "a", started or not.
func create(t *testing.T, r *executor.Runner, start bool) {
	t.Helper()
	if _, err := r.CreatePlan(context.Background(), plan("p", 1, task("t", "a")), start); err != nil {
		t.Fatal(err)
	}
}
