package metrics

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestRedisProbe: redstate_redis_up follows the probe's answer at each scrape, with the ping's
// round trip beside it.
func TestRedisProbe(t *testing.T) {
	m := New()
	var err error
	RegisterRedisProbe(m, func(context.Context) (time.Duration, error) { return 1500 * time.Microsecond, err })
	want := func(up string) string {
		return `
# HELP redstate_redis_ping_seconds Round trip of that ping.
# TYPE redstate_redis_ping_seconds gauge
redstate_redis_ping_seconds 0.0015
# HELP redstate_redis_up 1 when Redis answered this process's ping at scrape time, 0 when it did not (unreachable, refused, timed out).
# TYPE redstate_redis_up gauge
redstate_redis_up ` + up + "\n"
	}
	if e := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want("1")), "redstate_redis_up", "redstate_redis_ping_seconds"); e != nil {
		t.Error(e)
	}
	err = errors.New("connection refused")
	if e := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want("0")), "redstate_redis_up", "redstate_redis_ping_seconds"); e != nil {
		t.Error(e)
	}
	RegisterRedisProbe(nil, nil) // no registry: nothing to do
}
