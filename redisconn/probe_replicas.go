package redisconn

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
)

// writable fails while c's master would refuse or fail writes for want of replicas, which a
// PING does not show:
//
//   - with redis.durability.wait-replicas N, unless N replicas are online: WAIT N counts the
//     replicas that acknowledged the connection's writes (every replica online, on the
//     Prober's own connection, which has written nothing), waiting up to WaitTimeout; the
//     error wraps ErrNotDurable;
//   - with the server's min-replicas-to-write, unless that many replicas are good (INFO
//     replication shows min_slaves_good_slaves only when the setting is on; CONFIG GET reads
//     it, taken as 1 when the ACL refuses CONFIG): writes get NOREPLICAS until then.
//
// A check the ACL refuses (INFO) is skipped; other failures are EUNAVAILABLE.
func (p *Prober) writable(ctx context.Context, c *redis.Client) error {
	if d := p.durability; d.On() {
		n, err := c.Do(ctx, "wait", d.WaitReplicas, d.WaitTimeout.Milliseconds()).Int()
		switch {
		case err != nil:
			return redstate.Wrap(redstate.EUNAVAILABLE, err, "redis is not reachable")
		case n < d.WaitReplicas:
			return redstate.Wrap(redstate.EUNAVAILABLE,
				fmt.Errorf("%w: %d of %d replicas online at %s", ErrNotDurable, n, d.WaitReplicas, c.Options().Addr),
				"writes cannot reach enough replicas")
		}
	}
	return minReplicas(ctx, c)
}

// minReplicas fails while c's master has fewer good replicas than its min-replicas-to-write.
func minReplicas(ctx context.Context, c *redis.Client) error {
	info, err := c.Info(ctx, "replication").Result()
	if _, refused := errors.AsType[redis.Error](err); refused {
		return nil
	}
	if err != nil {
		return redstate.Wrap(redstate.EUNAVAILABLE, err, "redis is not reachable")
	}
	good, on := infoInt(info, "min_slaves_good_slaves")
	if !on {
		return nil
	}
	want := 1
	if v, err := c.ConfigGet(ctx, "min-replicas-to-write").Result(); err == nil {
		if n, err := strconv.Atoi(v["min-replicas-to-write"]); err == nil && n > 0 {
			want = n
		}
	}
	if good < want {
		return redstate.Errorf(redstate.EUNAVAILABLE, "writes are refused at %s: %d of the %d good replicas min-replicas-to-write asks for",
			c.Options().Addr, good, want)
	}
	return nil
}

// infoInt returns the integer field name of an INFO reply, and whether it is there.
func infoInt(info, name string) (int, bool) {
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			n, err := strconv.Atoi(v)
			return n, err == nil
		}
	}
	return 0, false
}
