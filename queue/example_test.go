package queue_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/redisqueue"
)

// redisAddr is your Redis; the tests start their own.
var redisAddr = "127.0.0.1:6379"

// A queue embedded in a Go program with its own go-redis client: a producer enqueues a job,
// a worker runs it with a Go handler and acks it (a handler error would retry it on the
// schedule, then dead-letter it).
func Example() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer client.Close()
	broker, err := redisqueue.New(client, redisqueue.Options{})
	if err != nil {
		log.Fatal(err)
	}

	const name = "example:emails"
	producer, err := queue.NewProducer(broker, name)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := producer.Enqueue(ctx, json.RawMessage(`{"to":"ada@example.com"}`)); err != nil {
		log.Fatal(err)
	}

	handled := make(chan struct{})
	worker, err := queue.NewWorker(broker, func(ctx context.Context, job *queue.Delivery) error {
		fmt.Printf("sending %s (retry %d)\n", job.Message.Payload, job.Message.RetryCount)
		close(handled)
		return nil // acks the job
	}, queue.WorkerSettings{Queue: name})
	if err != nil {
		log.Fatal(err)
	}
	run, stop := context.WithCancel(ctx)
	stopped := make(chan error)
	go func() { stopped <- worker.Run(run) }()

	<-handled
	stop() // a graceful stop: Run returns once the running job is settled
	if err := <-stopped; err != nil {
		log.Fatal(err)
	}

	admin, err := queue.NewAdmin(broker, name)
	if err != nil {
		log.Fatal(err)
	}
	stats, err := admin.Stats(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("pending %d, running %d, retrying %d, dead %d\n", stats.Pending, stats.Running, stats.Retrying, stats.Dead)
	// Output:
	// sending {"to":"ada@example.com"} (retry 0)
	// pending 0, running 0, retrying 0, dead 0
}
