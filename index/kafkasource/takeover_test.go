package kafkasource_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/kafkasource"
)

// TestSource_KilledMemberBacklogShowsThenMoves: two instances share a group; one is killed
// (SIGKILL: no commit, no leave) and records are produced to its partitions. While no rebalance
// can complete (the survivor's JoinGroup is held), the survivor's GroupLag shows every waiting
// record on those partitions, still not its own, although its own lag is 0. The coordinator
// expires the killed member after the configured session timeout; once the survivor may
// rejoin, it takes the partitions over, applies each record once (each row's version is its
// record's offset, nothing stale) and the group's lag falls to 0.
func TestSource_KilledMemberBacklogShowsThenMoves(t *testing.T) {
	const topic, parts = "takeover", 4
	e := newEnvCluster(t, []kfake.Opt{kfake.GroupMinSessionTimeout(100 * time.Millisecond)}, parts, topic)
	timing := func(o *kafkasource.Options) {
		o.SessionTimeout, o.HeartbeatInterval, o.RebalanceTimeout = 3*time.Second, 200*time.Millisecond, 60*time.Second
		o.GroupLagInterval = 100 * time.Millisecond
	}
	survivor := e.sourceWith("g", index.FormatCanal, []string{topic}, timing)
	run(t, survivor)
	victim := e.startMember(memberSpec{Topics: []string{topic}, Group: "g", SessionTimeout: 3 * time.Second,
		HeartbeatInterval: 200 * time.Millisecond, Rebalance: 60 * time.Second})

	h := newHistory(e, topic, parts, 80, 5)
	h.produce(80)
	e.waitTruth(h.tr)
	e.waitCommitted("g")
	var theirs []int32
	var victimID string
	waitFor(t, "two members share the partitions, all committed", func() (bool, string) {
		g := survivor.GroupLag()
		theirs, victimID = nil, ""
		mine := 0
		for _, p := range g.Partitions {
			switch {
			case p.Self:
				mine++
			case p.Member != "":
				theirs, victimID = append(theirs, p.Partition), p.Member
			}
		}
		return g.Members == 2 && mine > 0 && len(theirs) > 0 && mine+len(theirs) == parts && g.Records == 0, fmt.Sprintf("%+v", g)
	})

	release := make(chan struct{})
	var releaseOnce sync.Once
	open := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(open)
	e.cluster.ControlKey(int16(kmsg.JoinGroup), func(kmsg.Request) (kmsg.Response, error, bool) {
		e.cluster.KeepControl()
		e.cluster.SleepControl(func() { <-release })
		return nil, nil, false
	})
	victim.kill(t)
	killed := time.Now()

	const perPartition = 50
	waiting := map[int32]int64{}
	newRows := map[int]int64{} // id: its record's offset
	for _, p := range theirs {
		for i := range perPartition {
			id := 10_000 + int(p)*1000 + i
			s := state{las: 71, cat: 502}
			off := e.produce(topic, p, canal("INSERT", 1_800_000_000_000, 1, rowJSON(id, s, "1")))
			h.tr[id] = &s
			waiting[p]++
			newRows[id] = off
		}
	}
	total := int64(len(theirs) * perPartition)
	waitFor(t, "the killed member's backlog in the survivor's group lag", func() (bool, string) {
		g := survivor.GroupLag()
		var own int64
		for _, n := range survivor.Lag() {
			own += n
		}
		for _, p := range g.Partitions {
			if w, ok := waiting[p.Partition]; ok && (p.Self || p.Lag != w) {
				return false, fmt.Sprintf("partition %d: %+v, want lag %d not owned by the survivor", p.Partition, p, w)
			}
		}
		return g.Records == total && own == 0, fmt.Sprintf("group lag %d, own lag %d; %+v", g.Records, own, g)
	})
	waitFor(t, "the coordinator expires the killed member: its partitions unowned, their backlog shown", func() (bool, string) {
		g := survivor.GroupLag()
		for _, p := range g.Partitions {
			if w, ok := waiting[p.Partition]; ok && (p.Member != "" || p.Lag != w) {
				return false, fmt.Sprintf("partition %d: %+v (the killed member was %s)", p.Partition, p, victimID)
			}
		}
		return g.Members == 1 && g.Records == total, fmt.Sprintf("%+v", g)
	})
	t.Logf("killed member expired %s after the kill (session timeout 3s; 45s before it was configurable)", time.Since(killed).Round(100*time.Millisecond))

	st := e.ix.Stats("db1", "table1")
	applied, stale := st.Applied.Load(), st.Stale.Load()
	open()
	waitFor(t, "the survivor owns every partition and the group's lag is 0", func() (bool, string) {
		g := survivor.GroupLag()
		for _, p := range g.Partitions {
			if !p.Self || p.Lag != 0 {
				return false, fmt.Sprintf("%+v", g)
			}
		}
		return len(g.Partitions) == parts, fmt.Sprintf("%+v", g)
	})
	e.waitTruth(h.tr)
	e.waitCommitted("g")
	if got, gotStale := st.Applied.Load()-applied, st.Stale.Load()-stale; got != total || gotStale != 0 {
		t.Errorf("after the takeover %d changes applied and %d stale, want each of the %d records applied once", got, gotStale, total)
	}
	keys, _ := e.ix.Keys("db1", "table1")
	for id, off := range newRows {
		d, err := e.store.Dump(context.Background(), keys.Version(fmt.Sprint(id)))
		if err != nil || len(d) != 1 {
			t.Fatalf("row %d version: %v %v", id, d, err)
		}
		for _, v := range d {
			if !strings.Contains(v, string(index.LogVersion(uint64(off), 0))+"|") {
				t.Errorf("row %d version %q, want its record's offset %d", id, v, off)
			}
		}
	}
}
