package redistest

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// CommandCalls returns how many times the server behind client has run each of cmds (lower
// case, e.g. "evalsha", "wait"), summed, since its start or last CONFIG RESETSTAT (INFO
// commandstats).
func CommandCalls(t testing.TB, client *redis.Client, cmds ...string) int {
	t.Helper()
	info, err := client.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatalf("redistest: INFO commandstats: %v", err)
	}
	n := 0
	for _, line := range strings.Split(info, "\n") {
		for _, cmd := range cmds {
			if rest, ok := strings.CutPrefix(line, "cmdstat_"+cmd+":calls="); ok {
				calls, err := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
				if err != nil {
					t.Fatalf("redistest: commandstats line %q: %v", line, err)
				}
				n += calls
			}
		}
	}
	return n
}
