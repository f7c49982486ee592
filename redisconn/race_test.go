package redisconn_test

import (
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/redisconn"
	"github.com/redstate/redstate/redistest"
)

// TestNew_ConnAndPoolOpenConnectionsConcurrently opens a dedicated connection (Conn, as the
// queue's dequeue and the durability hook do) while the pool opens its own, on fresh clients.
// go-redis's maintenance-notification handshake, on by default ("auto"), is refused by this
// server and then records "disabled" in options a Conn shares with its client under another
// lock: a data race the race detector reports. redisconn.New turns the handshake off.
func TestNew_ConnAndPoolOpenConnectionsConcurrently(t *testing.T) {
	srv := redistest.StartStandalone(t)
	ctx := ctxT(t)
	for range 20 {
		client := newClient(t, redisconn.Options{URL: srv.URL})
		c := client.(*redis.Client)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			conn := c.Conn()
			defer func() { _ = conn.Close() }()
			if err := conn.Ping(ctx).Err(); err != nil {
				t.Error(err)
			}
		}()
		go func() {
			defer wg.Done()
			if err := c.Ping(ctx).Err(); err != nil {
				t.Error(err)
			}
		}()
		wg.Wait()
	}
}
