package redisqueue_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/queue/redisqueue"
	"github.com/redstate/redstate/redistest"
)

// TestACLRefusal_IsUnavailable: a Redis ACL that forbids the queue's commands makes every
// operation EUNAVAILABLE (HTTP 503: the operator must fix the ACL), never EINTERNAL (500).
func TestACLRefusal_IsUnavailable(t *testing.T) {
	srv := redistest.StartStandalone(t)
	admin := srv.Client(t)
	ctx := context.Background()
	// reader may only read: LPUSH, scripts and writes are refused with NOPERM.
	if err := admin.Do(ctx, "ACL", "SETUSER", "reader", "on", ">reader-password-1234", "~*", "+@read", "+ping", "+hello", "+client").Err(); err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, Username: "reader", Password: "reader-password-1234", MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	b := mustBroker(t, c, redisqueue.Options{})

	checks := map[string]error{}
	checks["enqueue"] = b.Enqueue(ctx, "jobs", queue.NewMessage(time.Now(), nil))
	_, checks["stats"] = b.Stats(ctx, "jobs")
	_, checks["requeue all"] = b.RequeueAllDead(ctx, "jobs")
	for op, err := range checks {
		if code := redstate.ErrorCode(err); code != redstate.EUNAVAILABLE {
			t.Errorf("%s under a read-only ACL: code %q (%v), want EUNAVAILABLE", op, code, err)
		}
	}
}
