package redisqueue_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/redisqueue"
	"github.com/redstate/redstate/redistest"
)

// TestEnqueueJob_ReturnsTheStoredRecord: the job EnqueueJob answers for a new job (built from
// the request and the script's enqueue time, not read back) equals the record Job reads, for a
// pending and a scheduled job with options, and a payload the encoder compacts.
func TestEnqueueJob_ReturnsTheStoredRecord(t *testing.T) {
	redistest.RunOnTopologies(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := context.Background()
		b := mustBroker(t, c, redisqueue.Options{Namespace: uniqueNS()})
		p, err := queue.NewProducer(b, "records")
		if err != nil {
			t.Fatal(err)
		}
		three := 3
		for _, tc := range []struct {
			name  string
			opts  queue.JobOptions
			state queue.JobState
		}{
			{"pending", queue.JobOptions{MaxRetries: &three, Timeout: 2 * time.Second, Retention: time.Minute}, queue.StatePending},
			{"scheduled", queue.JobOptions{ID: "later-1", Delay: time.Hour, UniqueFor: time.Minute, RetryDelays: []time.Duration{time.Second}}, queue.StateScheduled},
		} {
			got, created, err := p.EnqueueJob(ctx, json.RawMessage(`{ "n" : [1, 2] }`), tc.opts)
			if err != nil || !created {
				t.Fatalf("%s: created %v, err %v", tc.name, created, err)
			}
			want, err := b.Job(ctx, "records", got.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.State != tc.state || !reflect.DeepEqual(got, want) {
				t.Errorf("%s: EnqueueJob answered\n%+v\nJob reads\n%+v", tc.name, got, want)
			}
			// The same id again is the stored job, not created.
			again, created, err := p.EnqueueJob(ctx, json.RawMessage(`{"n":[1,2]}`), queue.JobOptions{ID: got.ID})
			if err != nil || created || !reflect.DeepEqual(again, want) {
				t.Errorf("%s: again: created %v, err %v, job\n%+v\nwant\n%+v", tc.name, created, err, again, want)
			}
		}
	})
}
