package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/component"
	"github.com/redstate/redstate/config"
	"github.com/redstate/redstate/executor"
	"github.com/redstate/redstate/executor/executorblock"
	"github.com/redstate/redstate/executor/redisstate"
)

// newExecutorCommand returns `redstate executor`: list the stage executor's plans, tasks,
// tenant locks and checkpoints in Redis, and pause, resume, retry or cancel a task.
func newExecutorCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "executor",
		Short: "Inspect the stage executor in Redis (plans, tasks, locks, checkpoints) and control tasks",
		Long: `Admin commands for the stage executor (docs/executor.md). They read the configured Redis directly
(--redis, --redis-cluster, --redis-sentinel*, --config or REDSTATE_* variables) under the same
namespace as serve (namespace + executor.persistence.redis.key-prefix).

Listings print a table, or one JSON array with --json. Control commands (pause, resume, retry,
cancel) are sent to the serving instance that runs the task (or, for a task running nowhere, to
a live instance) through its Redis control inbox, applied there within a second, and the command
waits for the effect (--wait). pause and cancel of a task no instance is running also work with
no server up; resume and retry need a live instance, since the task runs there.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newExecutorPlansCommand(), newExecutorTasksCommand(), newExecutorLocksCommand(), newExecutorCheckpointsCommand())
	for _, action := range []string{executor.ControlPause, executor.ControlResume, "retry", executor.ControlCancel} {
		cmd.AddCommand(newExecutorControlCommand(action))
	}
	return cmd
}

// redisExecutorStores returns the executor's Redis state stores of cfg, as serve opens them,
// and their keys.
func redisExecutorStores(client redis.UniversalClient, cfg config.Config) (executor.Stores, executor.Keys, error) {
	pc := cfg.Executor.Persistence.Redis.WithDefaults()
	keys, err := executor.NewKeys(redstate.Prefix(cfg.Namespace, pc.KeyPrefix))
	if err != nil {
		return executor.Stores{}, executor.Keys{}, err
	}
	directLocks := executorblock.DirectLocks(cfg.Executor, component.Env{RedisWaitsForReplicas: cfg.Redis.Durability.On()})
	stores, err := executorblock.RedisStores(client, keys, pc, directLocks)
	return stores, keys, err
}

// executorAdmin is what the executor commands work with.
type executorAdmin struct {
	lister *redisstate.Lister
	stores executor.Stores
	// runner answers status queries and acts on tasks no instance runs; it has no stage
	// handlers and never runs a task.
	runner *executor.Runner
}

// withExecutor opens the executor's Redis stores of the configuration and runs f.
func withExecutor(cmd *cobra.Command, f func(*executorAdmin) error) error {
	return withRedisClient(cmd, func(cfg config.Config, client redis.UniversalClient) error {
		stores, keys, err := redisExecutorStores(client, cfg)
		if err != nil {
			return err
		}
		lister, err := redisstate.NewLister(client, redisstate.Options{Keys: keys})
		if err != nil {
			return err
		}
		runner, err := executor.New(executor.Options{Stores: stores, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			return err
		}
		defer runner.Shutdown()
		return f(&executorAdmin{lister: lister, stores: stores, runner: runner})
	})
}

// executorListCommand returns a listing subcommand: list fetches the rows; text prints them as
// a table.
func executorListCommand[T any](use, short string, list func(context.Context, *executorAdmin) ([]T, error), text func(io.Writer, []T) error) *cobra.Command {
	cmd := &cobra.Command{Use: use, Short: short, Args: cobra.NoArgs}
	asJSON := bindJSON(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return withExecutor(cmd, func(a *executorAdmin) error {
			rows, err := list(cmd.Context(), a)
			if err != nil {
				return err
			}
			if *asJSON {
				return writeJSON(cmd.OutOrStdout(), rows)
			}
			return text(cmd.OutOrStdout(), rows)
		})
	}
	config.BindFlags(cmd.Flags(), config.FlagsRedis, config.FlagsNamespace)
	return cmd
}

func newExecutorPlansCommand() *cobra.Command {
	return executorListCommand("plans", "List plans: status, progress, tasks",
		func(ctx context.Context, a *executorAdmin) ([]executor.PlanProjection, error) {
			return a.lister.Plans(ctx)
		},
		func(w io.Writer, plans []executor.PlanProjection) error {
			t := newTable(w, "PLAN", "STATUS", "PROGRESS", "TASKS", "MAX CONCURRENCY", "CREATED", "UPDATED")
			for _, p := range plans {
				t.row(p.PlanID, p.Status, fmt.Sprintf("%.0f%%", 100*p.Progress), len(p.TaskIDs), p.MaxConcurrency, p.CreatedAt, p.UpdatedAt)
			}
			return t.flush()
		})
}

func newExecutorTasksCommand() *cobra.Command {
	var plan string
	cmd := executorListCommand("tasks", "List tasks with stage progress (all, or --plan's)",
		func(ctx context.Context, a *executorAdmin) ([]executor.TaskStatusInfo, error) {
			var ids []string
			var err error
			if plan != "" {
				ids, err = a.runner.PlanTasks(ctx, plan)
			} else {
				ids, err = a.lister.TaskIDs(ctx)
			}
			if err != nil {
				return nil, err
			}
			out := []executor.TaskStatusInfo{}
			for _, id := range ids {
				info, err := a.runner.TaskStatus(ctx, id)
				if redstate.IsCode(err, redstate.ENOTFOUND) {
					continue // expired since
				}
				if err != nil {
					return nil, err
				}
				out = append(out, info)
			}
			return out, nil
		},
		func(w io.Writer, tasks []executor.TaskStatusInfo) error {
			t := newTable(w, "TASK", "TENANT", "PLAN", "STATUS", "STAGES", "CURRENT STAGE", "CHECKPOINT", "LOCK", "UPDATED", "REASON")
			for _, ti := range tasks {
				status := string(ti.Status)
				if ti.PauseRequested {
					status += " (pause requested)"
				}
				lock := "free"
				if ti.LockHeld {
					lock = "held"
				}
				t.row(ti.TaskID, ti.TenantID, ti.PlanID, status, fmt.Sprintf("%d/%d", ti.CompletedStages, len(ti.StageNames)),
					ti.CurrentStage, ti.Checkpoint, lock, ti.UpdatedAt, ti.Reason)
			}
			return t.flush()
		})
	cmd.Flags().StringVar(&plan, "plan", "", "list only this plan's tasks")
	return cmd
}

func newExecutorLocksCommand() *cobra.Command {
	return executorListCommand("locks", "List held tenant locks: holder, fence, time left",
		func(ctx context.Context, a *executorAdmin) ([]executor.LockInfo, error) { return a.lister.Locks(ctx) },
		func(w io.Writer, locks []executor.LockInfo) error {
			t := newTable(w, "TENANT", "HOLDER", "FENCE", "TIME LEFT")
			for _, l := range locks {
				t.row(l.TenantID, l.Holder, l.Fence, time.Duration(l.TimeLeftMs)*time.Millisecond)
			}
			return t.flush()
		})
}

func newExecutorCheckpointsCommand() *cobra.Command {
	return executorListCommand("checkpoints", "List stored checkpoints: version, completed stages, saved at",
		func(ctx context.Context, a *executorAdmin) ([]executor.CheckpointInfo, error) {
			return a.lister.Checkpoints(ctx)
		},
		func(w io.Writer, cps []executor.CheckpointInfo) error {
			t := newTable(w, "TASK", "VERSION", "COMPLETED STAGES", "LAST STAGE", "CONTEXT KEYS", "SAVED", "ERROR")
			for _, c := range cps {
				last := ""
				if n := len(c.CompletedStages); n > 0 {
					last = c.CompletedStages[n-1]
				}
				t.row(c.TaskID, c.Version, len(c.CompletedStages), last, c.ContextKeys, c.SavedAt, c.Error)
			}
			return t.flush()
		})
}

// controlEffect reports whether a task's status shows that action took effect (before is its
// status when the action was sent).
func controlEffect(action string, before, ti executor.TaskStatusInfo) bool {
	switch action {
	case executor.ControlPause:
		return ti.Status == executor.TaskPaused || ti.PauseRequested
	case executor.ControlResume:
		return ti.Status != executor.TaskPaused && !ti.PauseRequested
	case executor.ControlCancel:
		return ti.Status == executor.TaskCancelled
	default: // retry: the task ran again (it may have failed again since)
		return ti.UpdatedAt.After(before.UpdatedAt) || ti.Status != before.Status
	}
}

// newExecutorControlCommand returns `executor pause|resume|retry|cancel TASK`.
func newExecutorControlCommand(action string) *cobra.Command {
	shorts := map[string]string{
		executor.ControlPause:  "Pause a task (at its next stage boundary when running)",
		executor.ControlResume: "Resume a paused task from its checkpoint (on a live instance)",
		"retry":                "Retry a failed task from its checkpoint, or --from-start (on a live instance)",
		executor.ControlCancel: "Cancel a task for good: its checkpoint is removed (needs --yes)",
	}
	var wait time.Duration
	var fromStart bool
	cmd := &cobra.Command{Use: action + " TASK_ID", Short: shorts[action], Args: cobra.ExactArgs(1)}
	asJSON := bindJSON(cmd)
	var yes *bool
	if action == executor.ControlCancel {
		yes = bindYes(cmd)
	}
	if action == "retry" {
		cmd.Flags().BoolVar(&fromStart, "from-start", false, "run every stage again (the checkpoint is removed)")
	}
	cmd.Flags().DurationVar(&wait, "wait", 10*time.Second, "how long to wait for the effect")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return withExecutor(cmd, func(a *executorAdmin) error {
			ctx, id := cmd.Context(), args[0]
			before, err := a.runner.TaskStatus(ctx, id)
			if err != nil {
				return err
			}
			if yes != nil && !*yes {
				return notConfirmed("cancel task %s (tenant %s, %s, %d/%d stages done) for good and remove its checkpoint",
					id, before.TenantID, before.Status, before.CompletedStages, len(before.StageNames))
			}
			sent := action
			if action == "retry" {
				sent = executor.ControlRetry
				if fromStart {
					sent = executor.ControlRetryFromStart
				}
			}
			via, err := sendControl(ctx, a, before, sent)
			if err != nil {
				return err
			}
			after, err := awaitControl(ctx, a.runner, before, action, wait)
			if err != nil {
				return fmt.Errorf("%s of task %s (%s): %w", action, id, via, err)
			}
			if *asJSON {
				return writeJSON(cmd.OutOrStdout(), after)
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s %s (%s): now %s\n", action, id, via, describeStatus(after))
			return err
		})
	}
	config.BindFlags(cmd.Flags(), config.FlagsRedis, config.FlagsNamespace)
	return cmd
}

// describeStatus is a task's status for a sentence.
func describeStatus(ti executor.TaskStatusInfo) string {
	s := string(ti.Status)
	if ti.PauseRequested {
		s += " (pause requested: pauses at the next stage boundary)"
	}
	return s
}

// sendControl delivers action for task ti: to the instance running it, else to a live
// instance; pause and cancel of a task no instance runs are applied here when no instance is
// alive. It says where the action went.
func sendControl(ctx context.Context, a *executorAdmin, ti executor.TaskStatusInfo, action string) (string, error) {
	target := ""
	if ti.Status == executor.TaskRunning {
		owner, err := a.stores.Registry.Owner(ctx, ti.TaskID)
		if err != nil {
			return "", err
		}
		if owner != "" {
			alive, err := a.stores.Registry.Alive(ctx, owner)
			if err != nil {
				return "", err
			}
			if !alive {
				return "", redstate.Errorf(redstate.ECONFLICT, "task %s is RUNNING on instance %s, which stopped its liveness heartbeat; the orphan scan marks it FAILED (interrupted) shortly, then retry or cancel it", ti.TaskID, owner)
			}
			target = owner
		}
	}
	if target == "" {
		live, err := a.lister.Instances(ctx)
		if err != nil {
			return "", err
		}
		if len(live) > 0 {
			target = live[0]
		}
	}
	if target == "" {
		switch action {
		case executor.ControlPause:
			return "applied in Redis: no live instance", a.runner.Pause(ctx, ti.TaskID)
		case executor.ControlCancel:
			return "applied in Redis: no live instance", a.runner.Cancel(ctx, ti.TaskID)
		}
		return "", redstate.Errorf(redstate.EUNAVAILABLE, "no live executor instance to %s task %s on: start `redstate serve` with this Redis and namespace", action, ti.TaskID)
	}
	cmd := executor.ControlCommand{TaskID: ti.TaskID, Action: action, SentAt: time.Now().UTC()}
	if err := a.stores.Registry.SendControl(ctx, target, cmd); err != nil {
		return "", err
	}
	return "sent to instance " + target, nil
}

// awaitControl polls the task's status until it shows action's effect or wait passes.
func awaitControl(ctx context.Context, r *executor.Runner, before executor.TaskStatusInfo, action string, wait time.Duration) (executor.TaskStatusInfo, error) {
	deadline := time.Now().Add(wait)
	for {
		ti, err := r.TaskStatus(ctx, before.TaskID)
		if err != nil {
			return ti, err
		}
		if controlEffect(action, before, ti) {
			return ti, nil
		}
		if time.Now().After(deadline) {
			return ti, errors.New("no effect within --wait " + wait.String() + ": the task is still " + describeStatus(ti) +
				" (the instance logs why a control command could not be applied)")
		}
		select {
		case <-ctx.Done():
			return ti, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
