package kafkasource

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/indextest"
	"github.com/redstate/redstate/index/memindex"
)

// testIndexer is an index of the seed table on the memory store.
func testIndexer(t *testing.T) *index.Indexer {
	t.Helper()
	ix, err := index.New(memindex.New(), []index.TableSpec{indextest.SeedTable(false)}, index.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

// TestClientOptions_GroupTiming: the session timeout, heartbeat interval and rebalance timeout
// of Options (or their defaults) are the consumer client's, and GroupTiming reports them.
func TestClientOptions_GroupTiming(t *testing.T) {
	for _, c := range []struct {
		name                          string
		opts                          Options
		session, heartbeat, rebalance time.Duration
	}{
		{"defaults", Options{}, index.DefaultKafkaSessionTimeout, index.DefaultKafkaHeartbeatInterval, index.DefaultKafkaRebalanceTimeout},
		{"set", Options{SessionTimeout: 7 * time.Second, HeartbeatInterval: 700 * time.Millisecond, RebalanceTimeout: 17 * time.Second},
			7 * time.Second, 700 * time.Millisecond, 17 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.opts.Brokers, c.opts.Topics = []string{"127.0.0.1:1"}, []string{"t"}
			s, err := New(testIndexer(t), c.opts)
			if err != nil {
				t.Fatal(err)
			}
			cl, err := kgo.NewClient(s.clientOptions()...)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			if got := cl.OptValue(kgo.SessionTimeout); got != c.session {
				t.Errorf("session timeout %v, want %v", got, c.session)
			}
			if got := cl.OptValue(kgo.HeartbeatInterval); got != c.heartbeat {
				t.Errorf("heartbeat interval %v, want %v", got, c.heartbeat)
			}
			if got := cl.OptValue(kgo.RebalanceTimeout); got != c.rebalance {
				t.Errorf("rebalance timeout %v, want %v", got, c.rebalance)
			}
			want := GroupTiming{SessionTimeout: c.session, HeartbeatInterval: c.heartbeat, RebalanceTimeout: c.rebalance, GroupLagInterval: index.DefaultKafkaGroupLagInterval}
			if got := s.GroupTiming(); got != want {
				t.Errorf("GroupTiming %+v, want %+v", got, want)
			}
		})
	}
}

// TestNew_RefusesHeartbeatNotBelowSession: a heartbeat interval at or above the session
// timeout is refused, as the broker would expire the member between two heartbeats.
func TestNew_RefusesHeartbeatNotBelowSession(t *testing.T) {
	for _, hb := range []time.Duration{3 * time.Second, 4 * time.Second} {
		_, err := New(testIndexer(t), Options{Brokers: []string{"127.0.0.1:1"}, Topics: []string{"t"}, SessionTimeout: 3 * time.Second, HeartbeatInterval: hb})
		if redstate.ErrorCode(err) != redstate.EINVALID {
			t.Errorf("heartbeat %s, session 3s: err %v, want EINVALID", hb, err)
		}
	}
}

// TestPartitionLag: a partition's lag is its end offset minus the group's commit (never below
// 0); without a commit, what the group will read: from the log start, or nothing when it starts
// at the end; unknown (-1, with the reason) when an offset could not be read.
func TestPartitionLag(t *testing.T) {
	commits := kadm.OffsetResponses{"t": {
		0: {Offset: kadm.Offset{Topic: "t", Partition: 0, At: 40}},
		1: {Offset: kadm.Offset{Topic: "t", Partition: 1, At: 120}}, // beyond the end: a recreated topic
		2: {Offset: kadm.Offset{Topic: "t", Partition: 2, At: -1}},
		4: {Offset: kadm.Offset{Topic: "t", Partition: 4, At: -1}, Err: kerr.UnstableOffsetCommit},
	}}
	starts := kadm.ListedOffsets{"t": {2: {Topic: "t", Partition: 2, Offset: 30}, 3: {Topic: "t", Partition: 3, Offset: 5}}}
	end := func(p int32, off int64, err error) kadm.ListedOffset {
		return kadm.ListedOffset{Topic: "t", Partition: p, Offset: off, Err: err}
	}
	for _, c := range []struct {
		name      string
		atEnd     bool
		end       kadm.ListedOffset
		committed int64
		lag       int64
		err       string
	}{
		{"committed", false, end(0, 100, nil), 40, 60, ""},
		{"commit beyond the end", false, end(1, 100, nil), 120, 0, ""},
		{"no commit: from the log start", false, end(2, 100, nil), -1, 70, ""},
		{"never committed: from the log start", false, end(3, 100, nil), -1, 95, ""},
		{"no commit, start latest: nothing waits", true, end(3, 100, nil), -1, 0, ""},
		{"commit unreadable", false, end(4, 100, nil), -1, -1, "committed offset: UNSTABLE_OFFSET_COMMIT"},
		{"end unreadable", false, end(0, -1, kerr.NotLeaderForPartition), -1, -1, "end offset: NOT_LEADER_FOR_PARTITION"},
		{"start not listed", false, end(5, 100, nil), -1, -1, "start offset: not listed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &Source{opts: Options{StartAtEnd: c.atEnd}}
			got := s.partitionLag(c.end, commits, starts)
			if got.Committed != c.committed || got.Lag != c.lag || (c.err == "") != (got.Err == "") || !strings.HasPrefix(got.Err, c.err) {
				t.Errorf("got %+v, want committed %d lag %d err %q", got, c.committed, c.lag, c.err)
			}
		})
	}
}
