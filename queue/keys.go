package queue

import (
	"strconv"
	"strings"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/keyspace"
)

// maxNameLen bounds queue names and consumer ids (they become parts of keys).
const maxNameLen = 200

// ValidateQueueName checks a queue name: 1..200 characters from [A-Za-z0-9:_.-]. Braces are
// excluded so a name can never smuggle its own Cluster hash tag. Errors: EINVALID.
func ValidateQueueName(name string) error { return validateName("queue name", name) }

// ValidateConsumerID checks a consumer id by the same rule as queue names. Errors: EINVALID.
func ValidateConsumerID(id string) error { return validateName("consumer id", id) }

func validateName(what, s string) error {
	if s == "" || len(s) > maxNameLen {
		return redstate.Errorf(redstate.EINVALID, "%s must be 1..%d characters", what, maxNameLen)
	}
	if keyspace.InvalidIDByte(s, keyspace.NamePunct) >= 0 {
		return redstate.Errorf(redstate.EINVALID, "%s %q: only letters, digits and :_.- are allowed", what, s)
	}
	return nil
}

// Keys are the Redis keys of one queue (see docs/queue.md). On a standalone or Sentinel server
// the queue's name is used verbatim ("jobs", "jobs:dead") so that producers outside redstate
// can LPUSH onto it; on Cluster every key of a queue carries the hash tag "{<queue>}" so
// that one Lua script can touch them all.
type Keys struct {
	// Pending is the pending LIST (producers LPUSH, consumers BLMOVE RIGHT → LEFT).
	Pending string
	// Dead is the dead-letter LIST (LPUSH, newest first).
	Dead string
	// Retry is the retry-schedule ZSET (member: message, score: due time in Unix ms).
	Retry string
	// Consumers is the consumer-lease ZSET (member: consumer id, score: lease deadline in
	// Unix ms); RecoverExpired reads the expired range.
	Consumers string
	// Scheduled is the ZSET of jobs waiting for their time (member: message, score: due time
	// in Unix ms); PromoteDue moves them to pending with the due retries.
	Scheduled string
	// Paused is the STRING whose existence pauses the queue (Broker.Pause).
	Paused string
	// JobPrefix + job id is the job's record HASH (Broker.EnqueueJob).
	JobPrefix string
	// JobIndexPrefix + state is the ZSET of the jobs in that state (member: job id, score: time
	// of the transition in Unix ms), for Broker.Jobs.
	JobIndexPrefix string
	// uniquePrefix + unique key is the STRING (the holding job's id) of a unique lock.
	uniquePrefix string
	// processingPrefix + consumer id is a consumer's in-flight LIST.
	processingPrefix string
	// statsPrefix + Unix minute is the HASH of that minute's job counts (outcome → jobs).
	statsPrefix string
	// enqueuedPrefix + job id is the STRING marking a job id enqueued moments ago.
	enqueuedPrefix string
	// oncePrefix + call token is the STRING holding the reply of one call of a write.
	oncePrefix string
}

// NewKeys returns the keys of one queue under p: the deployment's namespace, a plain prefix put
// before every key (e.g. "prod-" gives "prod-jobs" on standalone and "prod-{jobs}:dead" on
// Cluster; "" gives the queue's own names), and the queue's name as the block prefix (it must
// pass ValidateQueueName). The namespace must not contain '{' or '}' so that the queue's own
// hash tag stays the key's tag; the backend validates it.
func NewKeys(p redstate.KeyPrefix, cluster bool) Keys {
	base := p.Block
	if cluster {
		base = "{" + p.Block + "}"
	}
	base = p.Namespace + base
	return Keys{
		Pending:          base,
		Dead:             base + ":dead",
		Retry:            base + ":retry",
		Consumers:        base + ":consumers",
		Scheduled:        base + ":scheduled",
		Paused:           base + ":paused",
		JobPrefix:        base + ":job:",
		JobIndexPrefix:   base + ":jobs:",
		uniquePrefix:     base + ":unique:",
		processingPrefix: base + ":processing:",
		statsPrefix:      base + ":stats:",
		enqueuedPrefix:   base + ":enqueued:",
		oncePrefix:       base + ":once:",
	}
}

// Throughput returns the HASH of the job counts of minute (Unix time / 60).
func (k Keys) Throughput(minute int64) string {
	return k.statsPrefix + strconv.FormatInt(minute, 10)
}

// Enqueued returns the STRING that marks id (a job id in key-safe form) as enqueued: while
// it exists, an Enqueue of that job id is a copy of one already made (queue.DedupWindow).
func (k Keys) Enqueued(id string) string { return k.enqueuedPrefix + id }

// Job returns the record HASH of job id (which must pass ValidateJobID).
func (k Keys) Job(id string) string { return k.JobPrefix + id }

// Unique returns the STRING of the unique lock of key (JobRequest.UniqueKey).
func (k Keys) Unique(key string) string { return k.uniquePrefix + key }

// Once returns the STRING that holds the reply of the call token of a write (a marker of
// internal/resend): a copy of that call the client sends again finds it and changes nothing.
func (k Keys) Once(token string) string { return k.oncePrefix + token }

// Processing returns the in-flight LIST of consumerID (which must pass ValidateConsumerID).
func (k Keys) Processing(consumerID string) string { return k.processingPrefix + consumerID }

// NamesCollide tells whether two queues' keys would overlap: the same name, or one name
// extending the other with a suffix that one of the other's own keys uses (":dead", ":retry",
// ":consumers", ":scheduled", ":paused", ":processing" and its consumer lists, ":stats" and
// its minutes, ":enqueued" and ":once" and their markers, ":job", ":jobs" and ":unique" and
// their records, indexes and locks). Such a pair must not be configured
// together: with "jobs" and "jobs:dead", the second queue's workers would
// consume the first one's dead letters.
func NamesCollide(a, b string) bool {
	if a == b {
		return true
	}
	if len(b) < len(a) {
		a, b = b, a
	}
	rest, ok := strings.CutPrefix(b, a+":")
	if !ok {
		return false
	}
	switch rest {
	case "dead", "retry", "consumers", "processing", "scheduled", "paused":
		return true
	}
	for _, place := range []string{"processing", "stats", "enqueued", "once", "job", "jobs", "unique"} {
		if rest == place || strings.HasPrefix(rest, place+":") {
			return true
		}
	}
	return false
}
