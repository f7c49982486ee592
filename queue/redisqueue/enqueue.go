package redisqueue

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/keyspace"
	"github.com/redstate/redstate/queue"
)

// Enqueue implements queue.Broker: the message joins the enqueues made at the same moment by
// other callers of this Broker, and they leave together in one pushScript call per queue
// (enqueue_batch.go), which LPUSHes the encoded message onto the pending list unless the
// message's job id was enqueued on this queue within the marker lifetime (queue.DedupWindow, or
// longer: resend.Window of the client). A message without a job id is marked by the token of
// the script call, so that only go-redis's own copy of the call is recognised.
func (b *Broker) Enqueue(ctx context.Context, name string, msg queue.Message) error {
	if err := queue.ValidateQueueName(name); err != nil {
		return err
	}
	raw, err := queue.EncodeMessage(msg)
	if err != nil {
		return err
	}
	mark := ""
	if msg.JobID != "" {
		mark = b.keys(name).Enqueued(jobIDKey(msg.JobID))
	}
	return b.push(ctx, name, mark, string(raw))
}

// EnqueueRaw implements queue.Broker: raw is pushed verbatim, as a legacy producer's
// `LPUSH <queue> '{"RetryCount":0,…}'` does, through the same batches as Enqueue, marked by
// the token of its script call (raw is not parsed, so two equal raw strings are two jobs).
func (b *Broker) EnqueueRaw(ctx context.Context, name, raw string) error {
	if err := queue.ValidateQueueName(name); err != nil {
		return err
	}
	if raw == "" {
		return redstate.Errorf(redstate.EINVALID, "empty message")
	}
	return b.push(ctx, name, "", raw)
}

// push puts raw onto the pending list of name through the batches of pushes (pushReq), once per
// marker mark ("": once per script call).
func (b *Broker) push(ctx context.Context, name, mark, raw string) error {
	_, err := b.pushes.Do(ctx, pushReq{name: name, mark: mark, raw: raw})
	return batchErr(err, "enqueue")
}

// maxJobIDKey is the longest job id used verbatim in its marker key.
const maxJobIDKey = 64

// jobIDKey returns the form of a job id that goes into its marker key: the id itself when it
// is short and made of letters, digits, '-' and '_' (NewJobID's hex ids are), else "h" and the
// hex SHA-256 of the id, so that no id can make a key long or put a hash tag into it.
func jobIDKey(id string) string {
	if len(id) <= maxJobIDKey && plainID(id) {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "h" + hex.EncodeToString(sum[:])
}

// plainID tells whether id is made of letters, digits, '-' and '_' only.
func plainID(id string) bool { return keyspace.InvalidIDByte(id, keyspace.TokenPunct) < 0 }
