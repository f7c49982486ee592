package redisqueue

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/keyspace"
	"github.com/redstate/redstate/internal/resend"
	"github.com/redstate/redstate/queue"
)

// Enqueue implements queue.Broker: one enqueueScript call, which LPUSHes the encoded message
// onto the pending list unless the message's job id was enqueued on this queue within the
// marker lifetime (queue.DedupWindow, or longer: resend.Window of the client). A message
// without a job id is marked by a token of this call, so that only go-redis's own copy of the
// command is recognised.
func (b *Broker) Enqueue(ctx context.Context, name string, msg queue.Message) error {
	if err := queue.ValidateQueueName(name); err != nil {
		return err
	}
	raw, err := queue.EncodeMessage(msg)
	if err != nil {
		return err
	}
	k := b.keys(name)
	mark := k.Once(resend.Token())
	if msg.JobID != "" {
		mark = k.Enqueued(jobIDKey(msg.JobID))
	}
	return b.push(ctx, name, mark, string(raw))
}

// EnqueueRaw implements queue.Broker: one enqueueScript call pushing raw, verbatim, as a
// legacy producer's `LPUSH <queue> '{"RetryCount":0,…}'` does, marked by a token of this
// call (raw is not parsed, so two equal raw strings are two jobs).
func (b *Broker) EnqueueRaw(ctx context.Context, name, raw string) error {
	if err := queue.ValidateQueueName(name); err != nil {
		return err
	}
	if raw == "" {
		return redstate.Errorf(redstate.EINVALID, "empty message")
	}
	return b.push(ctx, name, b.keys(name).Once(resend.Token()), raw)
}

// push runs enqueueScript: raw onto the pending list of name, once per marker mark.
func (b *Broker) push(ctx context.Context, name, mark, raw string) error {
	err := enqueueScript.Run(ctx, b.client, []string{b.keys(name).Pending, mark}, raw, b.window.Milliseconds()).Err()
	return mapErr(err, "enqueue")
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
