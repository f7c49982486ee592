package feed

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
)

// FanOutJob is the payload of a job on the feed's fan-out queue: the post to fan out.
// Encoded in a queue message: {"RetryCount":0,"EnqueueTime":"…","Payload":{"postId":42},"JobId":"…"}.
type FanOutJob struct {
	// PostID is the post to fan out, > 0.
	PostID int64 `json:"postId"`
}

// legacyPostMember is the top-level member that carried the post id in fan-out jobs enqueued
// before the fan-out queue had its own payload (the queue's messages were then the report
// flow's, {"RecordId":<post id>,…}); such jobs may still wait in Redis after an upgrade.
const legacyPostMember = "RecordId"

// FanOutPayload returns the queue payload of a fan-out job for post ({"postId":post}).
// Errors: EINVALID (post <= 0).
func FanOutPayload(post int64) (json.RawMessage, error) {
	if post <= 0 {
		return nil, redstate.Errorf(redstate.EINVALID, "fan-out job: post id must be > 0, got %d", post)
	}
	b, err := json.Marshal(FanOutJob{PostID: post})
	if err != nil {
		return nil, redstate.Wrap(redstate.EINTERNAL, err, "fan-out job: encode")
	}
	return b, nil
}

// DecodeFanOutJob returns the post id of a fan-out job: its payload's postId, or, for a job
// enqueued before the fan-out queue had its own payload, its RecordId member.
// Errors: EINVALID (no post id > 0 in either place).
func DecodeFanOutJob(m queue.Message) (int64, error) {
	var post int64
	if len(m.Payload) > 0 {
		var job FanOutJob
		if err := json.Unmarshal(m.Payload, &job); err != nil {
			return 0, redstate.Wrap(redstate.EINVALID, err, "fan-out job: payload")
		}
		post = job.PostID
	} else if raw, ok := m.Field(legacyPostMember); ok {
		if err := json.Unmarshal(raw, &post); err != nil {
			return 0, redstate.Wrap(redstate.EINVALID, err, fmt.Sprintf("fan-out job: %s %s", legacyPostMember, raw))
		}
	}
	if post <= 0 {
		return 0, redstate.Errorf(redstate.EINVALID, "fan-out job without a post id > 0")
	}
	return post, nil
}

// CheckFanOutJob is the fan-out queue's queue.WorkerSettings.Check: a message that is not a fan-out
// job (DecodeFanOutJob fails) is dead-lettered with the reason.
func CheckFanOutJob(m queue.Message) error {
	_, err := DecodeFanOutJob(m)
	return err
}

// FanOutEnqueuer returns the Options.Enqueue of a Service whose fan-outs go through queue name
// on b: it enqueues a fan-out job (a queue.Producer job with FanOutPayload) in one round trip.
// Errors: EINVALID (nil broker, bad name).
func FanOutEnqueuer(b queue.Broker, name string) (func(ctx context.Context, post int64) error, error) {
	p, err := queue.NewProducer(b, name)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, post int64) error {
		payload, err := FanOutPayload(post)
		if err != nil {
			return err
		}
		_, err = p.Enqueue(ctx, payload)
		return err
	}, nil
}

// FanOutHandler returns the queue.Handler of the fan-out queue: it runs svc.FanOutPost for the
// job's post. A post that does not exist fails permanently (dead-lettered without retries); a
// message that is not a fan-out job too (a worker configured with CheckFanOutJob drops it
// before).
func FanOutHandler(svc *Service) queue.Handler {
	return func(ctx context.Context, d *queue.Delivery) error {
		post, err := DecodeFanOutJob(d.Message)
		if err != nil {
			return queue.Permanent(err)
		}
		err = svc.FanOutPost(ctx, post)
		if redstate.IsCode(err, redstate.ENOTFOUND) {
			return queue.Permanent(err)
		}
		return err
	}
}
