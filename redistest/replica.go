package redistest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// StartReplica starts a standalone server replicating master ("replicaof") and returns when
// the replica reports its link to master up, the master lists it online and a write on the
// master (a probe key, set and deleted) is acknowledged by WAIT. It sets the master's repl-diskless-sync-delay to
// 0 so the first sync starts at once. The replica is killed in t.Cleanup.
func StartReplica(t testing.TB, master *Server, opts ...Option) *Server {
	t.Helper()
	if err := master.Client(t).ConfigSet(context.Background(), "repl-diskless-sync-delay", "0").Err(); err != nil {
		t.Fatalf("redistest: master %s: %v", master.Addr, err)
	}
	r := StartStandalone(t, append(opts, WithConfig("replicaof", "127.0.0.1 "+strings.TrimPrefix(master.Addr, "127.0.0.1:")))...)
	c, m := r.Client(t), master.Client(t)
	deadline := time.Now().Add(readyTimeout)
	for {
		info, err := c.Info(context.Background(), "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:up") {
			var minfo string
			minfo, err = m.Info(context.Background(), "replication").Result()
			if err == nil && strings.Contains(minfo, ",port="+strings.TrimPrefix(r.Addr, "127.0.0.1:")+",state=online") && acked(m) {
				return r
			}
			info += minfo
		}
		if time.Now().After(deadline) {
			t.Fatalf("redistest: replica %s of %s: link not up (%q, %v)", r.Addr, master.Addr, info, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// acked reports whether a write on m reaches at least one replica within a second.
func acked(m *redis.Client) bool {
	ctx := context.Background()
	conn := m.Conn()
	defer func() { _ = conn.Close() }()
	const probe = "redistest:replica-probe"
	if conn.Set(ctx, probe, "1", 0).Err() != nil || conn.Del(ctx, probe).Err() != nil {
		return false
	}
	n, err := conn.Do(ctx, "WAIT", 1, 1000).Int()
	return err == nil && n >= 1
}
