package executor_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/executor"
	"github.com/redstate/redstate/executor/redisstate"
)

// redisAddr is your Redis; the tests start their own.
var redisAddr = "127.0.0.1:6379"

// The stage executor embedded in a Go program with its own go-redis client: its state
// (checkpoints, projections, tenant index, tenant locks, task registry) in Redis, a Go
// stage handler, and a plan of one task with two stages run to completion. The handler gets
// the context data the previous stage returned; the tenant lock keeps every other instance
// sharing the Redis from running tenant acme at the same time.
func Example() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer client.Close()

	opts := redisstate.Options{} // keys under "executor:", the seed's TTLs
	checkpoints, err1 := redisstate.NewCheckpoints(client, opts)
	projections, err2 := redisstate.NewProjections(client, opts)
	tenants, err3 := redisstate.NewTenantIndex(client, opts)
	locks, err4 := redisstate.NewLocks(client, opts)
	registry, err5 := redisstate.NewRegistry(client, opts)
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		log.Fatal(err)
	}
	runner, err := executor.New(executor.Options{Stores: executor.Stores{
		Checkpoints: checkpoints, Projections: projections, Index: tenants, Locks: locks, Registry: registry,
	}})
	if err != nil {
		log.Fatal(err)
	}

	runner.Handle("release", func(ctx context.Context, req executor.StageRequest) (map[string]string, error) {
		fmt.Printf("%s %s: %v\n", req.TenantID, req.Stage, req.ContextData)
		data := req.ContextData
		data[req.Stage] = "done"
		return data, nil // the context data of the following stages
	})
	finished := make(chan struct{})
	runner.OnEvent(func(ev executor.Event) {
		if ev.Type == string(executor.EventPlanCompleted) || ev.Type == string(executor.EventPlanFailed) {
			close(finished)
		}
	})
	run, stop := context.WithCancel(ctx)
	stopped := make(chan error)
	go func() { stopped <- runner.Run(run) }() // liveness, orphan scan, pause/resume commands

	plan, err := runner.CreatePlan(ctx, executor.PlanDef{MaxConcurrency: 1, Tasks: []executor.TaskDef{{
		TenantID: "acme", Handler: "release", Stages: []string{"build", "deploy"},
		ContextData: map[string]string{"version": "1.4.2"},
	}}}, true)
	if err != nil {
		log.Fatal(err)
	}
	select {
	case <-finished:
	case <-time.After(time.Minute):
		log.Fatal("the plan did not finish")
	}
	status, err := runner.PlanStatus(ctx, plan.PlanID)
	if err != nil {
		log.Fatal(err)
	}
	task := status.Tasks[0]
	fmt.Printf("plan %s: task %s, stages %v done %d\n", status.Status, task.Status, task.StageNames, task.CompletedStages)

	stop()
	if err := <-stopped; err != nil {
		log.Fatal(err)
	}
	// Output:
	// acme build: map[version:1.4.2]
	// acme deploy: map[build:done version:1.4.2]
	// plan COMPLETED: task COMPLETED, stages [build deploy] done 2
}
