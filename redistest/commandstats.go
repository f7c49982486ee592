package redistest

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/redisconn"
)

// CommandCalls returns how many times the server behind client has run each of cmds (lower
// case, e.g. "evalsha", "wait"), summed, since its start or last CONFIG RESETSTAT (INFO
// commandstats, read by redisconn.ReadCommandStats).
func CommandCalls(t testing.TB, client *redis.Client, cmds ...string) int {
	t.Helper()
	stats, err := redisconn.ReadCommandStats(context.Background(), client)
	if err != nil {
		t.Fatalf("redistest: INFO commandstats: %v", err)
	}
	n := 0
	for _, cmd := range cmds {
		n += int(stats[cmd].Calls)
	}
	return n
}
