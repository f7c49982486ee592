package httpapi

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/memqueue"
)

// TestQueues_DeadLettersStreamedInChunks: a dead-letter page larger than one chunk (100) holds
// every letter once, newest first, with the same content as pages of one chunk.
func TestQueues_DeadLettersStreamedInChunks(t *testing.T) {
	ra := newReportAPI(t, false)
	const n = 230
	for i := range n {
		ra.bury(t, int64(i+1))
	}
	big := decode[queue.DeadLetterPage](t, ra.do("GET", "/v1/queues/report:queue/dead?count=1000", ""))
	if big.Queue != "report:queue" || big.Start != 0 || len(big.DeadLetters) != n {
		t.Fatalf("queue %q start %d, %d letters, want %d", big.Queue, big.Start, len(big.DeadLetters), n)
	}
	for i, dl := range big.DeadLetters {
		if dl.Message == nil || recordOf(dl.Message) != int64(n-i) {
			t.Fatalf("letter %d: %+v, want record %d (newest first)", i, dl.Message, n-i)
		}
	}
	mid := decode[queue.DeadLetterPage](t, ra.do("GET", "/v1/queues/report:queue/dead?start=50&count=120", ""))
	if mid.Start != 50 || len(mid.DeadLetters) != 120 || mid.DeadLetters[0].Raw != big.DeadLetters[50].Raw ||
		mid.DeadLetters[119].Raw != big.DeadLetters[169].Raw {
		t.Fatalf("start=50 count=120: start %d, %d letters", mid.Start, len(mid.DeadLetters))
	}
}

// TestQueues_GenericDeadLetterMatchesTheDocument: a dead letter of a generic queue (no
// RecordId, a member a producer added) is answered and matches openapi.json (every response
// of these tests is checked against it); the document required RecordId and refused unknown
// members before the queue became generic.
func TestQueues_GenericDeadLetterMatchesTheDocument(t *testing.T) {
	broker := memqueue.NewBroker(memqueue.Options{})
	const q = "jobs:generic"
	admin, err := queue.NewAdmin(broker, q)
	if err != nil {
		t.Fatal(err)
	}
	a := newTestAPI(t, func(_ *Config, d *Deps) {
		d.Queues = func(name string) *queue.Admin {
			if name == q {
				return admin
			}
			return nil
		}
	})
	ctx := context.Background()
	m := queue.NewMessage(time.Now(), json.RawMessage(`{"postId":42}`))
	m.Fields = map[string]json.RawMessage{"Tenant": json.RawMessage(`"acme"`)}
	if err := broker.Enqueue(ctx, q, m); err != nil {
		t.Fatal(err)
	}
	if err := broker.Heartbeat(ctx, q, "c1", time.Minute); err != nil {
		t.Fatal(err)
	}
	d, err := broker.Dequeue(ctx, q, "c1", time.Second)
	if err != nil || d == nil {
		t.Fatalf("dequeue: %v %v", d, err)
	}
	if err := broker.Bury(ctx, d, d.Message); err != nil {
		t.Fatal(err)
	}
	r := a.do("GET", "/v1/queues/"+q+"/dead", "")
	if r.status != 200 || !strings.Contains(string(r.body), `\"Tenant\":\"acme\"`) || !strings.Contains(string(r.body), `"Tenant":"acme"`) {
		t.Fatalf("dead letters: %d %s", r.status, r.body)
	}
}
