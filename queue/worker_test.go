package queue_test

import (
	"context"
	"testing"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/memqueue"
)

func TestWorker_ConfigValidated(t *testing.T) {
	b := memqueue.NewBroker(memqueue.Options{})
	h := func(context.Context, *queue.Delivery) error { return nil }
	if _, err := queue.NewWorker(b, h, queue.WorkerSettings{Queue: "jobs", Concurrency: -1}); !redstate.IsCode(err, redstate.EINVALID) {
		t.Fatalf("negative concurrency: %v", err)
	}
	if _, err := queue.NewWorker(b, h, queue.WorkerSettings{}); !redstate.IsCode(err, redstate.EINVALID) {
		t.Fatalf("no queue: %v", err)
	}
	w, err := queue.NewWorker(b, h, queue.WorkerSettings{Queue: "jobs"})
	if err != nil {
		t.Fatal(err)
	}
	c := w.Settings()
	if c.Queue != "jobs" || c.Concurrency != 1 || c.MaxRetries != 3 || c.BlockTimeout.Seconds() != 30 ||
		c.ErrorDelay.Seconds() != 5 || len(c.RetryDelays) != 3 || queue.ValidateConsumerID(c.ConsumerID) != nil {
		t.Fatalf("defaults = %+v", c)
	}
}
