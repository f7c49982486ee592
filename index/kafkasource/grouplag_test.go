package kafkasource_test

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/kafkasource"
)

// TestSource_GroupTimingReachesTheBroker: the session and rebalance timeouts of Options are
// what the source's JoinGroup asks the coordinator for.
func TestSource_GroupTimingReachesTheBroker(t *testing.T) {
	e := newEnv(t, 1, "timing")
	var mu sync.Mutex
	var joins []kmsg.JoinGroupRequest
	e.cluster.ControlKey(int16(kmsg.JoinGroup), func(r kmsg.Request) (kmsg.Response, error, bool) {
		e.cluster.KeepControl()
		mu.Lock()
		joins = append(joins, *r.(*kmsg.JoinGroupRequest))
		mu.Unlock()
		return nil, nil, false
	})
	src := e.sourceWith("g", index.FormatCanal, []string{"timing"}, func(o *kafkasource.Options) {
		o.SessionTimeout, o.RebalanceTimeout = 7*time.Second, 23*time.Second
	})
	run(t, src)
	waitFor(t, "a JoinGroup", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(joins) > 0, ""
	})
	mu.Lock()
	defer mu.Unlock()
	for _, j := range joins {
		if j.SessionTimeoutMillis != 7000 || j.RebalanceTimeoutMillis != 23000 {
			t.Errorf("JoinGroup session %d ms, rebalance %d ms; want 7000 and 23000", j.SessionTimeoutMillis, j.RebalanceTimeoutMillis)
		}
	}
}

// TestSource_SessionTimeoutRefusedByTheBroker: a session timeout below the broker's
// group.min.session.timeout.ms (kfake's, like Kafka's, is 6 s) keeps the source out of the
// group; Failure says so and names the setting.
func TestSource_SessionTimeoutRefusedByTheBroker(t *testing.T) {
	e := newEnv(t, 1, "refused")
	src := e.sourceWith("g", index.FormatCanal, []string{"refused"}, func(o *kafkasource.Options) {
		o.SessionTimeout, o.HeartbeatInterval = time.Second, 100*time.Millisecond
	})
	run(t, src)
	waitFor(t, "the refusal reported", func() (bool, string) {
		f := src.Failure()
		return strings.Contains(f, "INVALID_SESSION_TIMEOUT") && strings.Contains(f, "index.kafka.session-timeout"), f
	})
}

// TestSource_GroupLagReadFailureIsReportedNotFatal: while the coordinator refuses to describe
// the group, GroupLag keeps its last read (and its time) with the error and when it happened;
// consumption goes on; once the coordinator answers again, so does GroupLag.
func TestSource_GroupLagReadFailureIsReportedNotFatal(t *testing.T) {
	e := newEnv(t, 2, "fail")
	h := newHistory(e, "fail", 2, 20, 3)
	h.produce(20)
	src := e.sourceWith("g", index.FormatCanal, []string{"fail"}, func(o *kafkasource.Options) { o.GroupLagInterval = 50 * time.Millisecond })
	run(t, src)
	e.waitTruth(h.tr)
	e.waitCommitted("g")
	waitFor(t, "a read with the group caught up", func() (bool, string) {
		g := src.GroupLag()
		return g.Err == "" && len(g.Partitions) == 2 && g.Records == 0 && g.Partitions[0].Self && g.Partitions[1].Self, fmt.Sprintf("%+v", g)
	})
	var refuse atomic.Bool
	refuse.Store(true)
	e.cluster.ControlKey(int16(kmsg.DescribeGroups), func(r kmsg.Request) (kmsg.Response, error, bool) {
		e.cluster.KeepControl()
		if !refuse.Load() {
			return nil, nil, false
		}
		req := r.(*kmsg.DescribeGroupsRequest)
		resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
		resp.Version = req.Version
		for _, g := range req.Groups {
			rg := kmsg.NewDescribeGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, rg)
		}
		return resp, nil, true
	})
	good := src.GroupLag()
	var failed kafkasource.GroupLag
	waitFor(t, "the failure reported", func() (bool, string) {
		failed = src.GroupLag()
		return strings.Contains(failed.Err, "describe group") && strings.Contains(failed.Err, "GROUP_AUTHORIZATION_FAILED"), fmt.Sprintf("%+v", failed)
	})
	if failed.ErrAt.IsZero() || failed.ReadAt.After(failed.ErrAt) || len(failed.Partitions) != 2 || failed.ReadAt.Before(good.ReadAt) {
		t.Errorf("failed read %+v: want the last good read (at %s) kept, and the failure's time", failed, good.ReadAt)
	}
	h.produce(20)
	e.waitTruth(h.tr) // consumption goes on
	refuse.Store(false)
	waitFor(t, "reads again", func() (bool, string) {
		g := src.GroupLag()
		return g.Err == "" && g.ReadAt.After(failed.ErrAt), fmt.Sprintf("%+v", g)
	})
}
