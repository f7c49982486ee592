package redisconn

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// ServerCPU returns the CPU time the Redis server (every master of a Cluster) has used since it
// started: used_cpu_user plus used_cpu_sys of INFO cpu. It lets a run on a shared machine tell
// the server's work per operation from the time it waited for a core, and it counts what INFO
// commandstats does not: reading, parsing and answering requests.
func ServerCPU(ctx context.Context, client redis.UniversalClient) (time.Duration, error) {
	var total atomic.Int64
	err := ForEachMaster(ctx, client, func(ctx context.Context, c redis.Cmdable) error {
		info, err := c.Info(ctx, "cpu").Result()
		if err != nil {
			return err
		}
		for _, line := range strings.Split(info, "\r\n") {
			name, v, _ := strings.Cut(line, ":")
			if name == "used_cpu_user" || name == "used_cpu_sys" {
				s, err := strconv.ParseFloat(v, 64)
				if err != nil {
					return err
				}
				total.Add(int64(s * float64(time.Second)))
			}
		}
		return nil
	})
	return time.Duration(total.Load()), err
}
