package buildstatusblock_test

import (
	"context"
	"fmt"
	"log"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/buildstatus/buildstatusblock"
	"github.com/redstate/redstate/component"
	"github.com/redstate/redstate/metrics"
)

// redisAddr is your Redis; the tests start their own.
var redisAddr = "127.0.0.1:6379"

// A Go program opens the registry as serve does: one component.Env holding its own go-redis
// client, a namespace and a metrics registry, and the block's own configuration section. The
// block brings the circuit breaker and the memory fallback of the configured policy, its
// health and its metrics; the program starts it, uses its store and closes it.
func Example() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer client.Close()
	env := component.Env{Redis: client, Namespace: "example-", Metrics: metrics.New()}

	cfg := buildstatus.DefaultConfig()
	cfg.Resilience.Policy = "fallback" // serve from memory while Redis is down, write back later
	block, err := buildstatusblock.Open(ctx, env, cfg)
	if err != nil {
		log.Fatal(err)
	}
	if err := block.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer block.Close(ctx)

	const id = "0b7c2a3e-5d1f-4a6b-9c8d-7e6f5a4b3c2d"
	created, _ := buildstatus.ParseDateTime("2026-11-28T10:00:00")
	_, err = block.Store().Save(ctx, &buildstatus.PublishResponse{
		BuildID: id, ProjectID: "example-project", Platforms: []string{"android"},
		Status: "IN_PROGRESS", PlatformResults: map[string]*buildstatus.PlatformResult{}, CreatedAt: &created,
	}, buildstatus.SaveOptions{})
	if err != nil {
		log.Fatal(err)
	}
	build, err := block.Store().Get(ctx, id)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("saved:", build.MustDoc().Status)
	n, _ := client.Exists(ctx, "example-ingenio:publish:build:"+id).Result()
	fmt.Println("key under the namespace:", n == 1)
	st := block.Health(ctx)
	fmt.Println("health:", st.Name, st.Backend, st.State)
	// Output:
	// saved: IN_PROGRESS
	// key under the namespace: true
	// health: builds redis ok
}
