package kafkasource_test

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/redstate/redstate/index"
)

// history produces random Canal flat messages to topic's partitions and keeps the truth: each
// row lives in partition id % partitions (Canal's partitionHash on the primary key); batches
// share their id and es over several messages.
type history struct {
	e          *env
	topic      string
	partitions int32
	rows       int
	rnd        *rand.Rand
	tr         truth
	es, batch  int64
}

func newHistory(e *env, topic string, partitions int32, rows int, seed uint64) *history {
	return &history{e: e, topic: topic, partitions: partitions, rows: rows, rnd: rand.New(rand.NewPCG(seed, 1)), tr: truth{}, es: 1_700_000_000_000, batch: 1}
}

// produce writes n messages, one partition's at a time (each ProduceSync in order).
func (h *history) produce(n int) {
	h.e.t.Helper()
	for range n {
		if h.rnd.IntN(4) == 0 {
			h.batch++
			if h.rnd.IntN(2) == 0 {
				h.es += 1000
			}
		}
		p := int32(h.rnd.IntN(int(h.partitions)))
		var ids []int
		for _, id := range h.rnd.Perm(h.rows / int(h.partitions))[:1+h.rnd.IntN(3)] {
			ids = append(ids, id*int(h.partitions)+int(p)+1)
		}
		typ, yn := "UPDATE", "1"
		switch h.rnd.IntN(6) {
		case 0:
			typ = "DELETE"
		case 1:
			yn = "0" // logical delete
		case 2:
			typ = "INSERT"
		}
		rows := make([]string, len(ids))
		for i, id := range ids {
			s := state{las: 70 + h.rnd.IntN(3), cat: 500 + h.rnd.IntN(4)}
			rows[i] = rowJSON(id, s, yn)
			if typ == "DELETE" || yn == "0" {
				h.tr[id] = nil
			} else {
				h.tr[id] = &s
			}
		}
		h.e.produce(h.topic, p, canal(typ, h.es, h.batch, rows...))
	}
}

// TestSource_CrashBeforeCommitReplays: a consumer that applied records but never committed
// (every commit refused, as if it died first) leaves them to the next one, which replays them
// from the start: stale by version, and the index ends equal to the truth.
func TestSource_CrashBeforeCommitReplays(t *testing.T) {
	e := newEnv(t, 2, "crash")
	var refuse atomic.Bool
	refuse.Store(true)
	e.cluster.ControlKey(int16(kmsg.OffsetCommit), func(r kmsg.Request) (kmsg.Response, error, bool) {
		e.cluster.KeepControl()
		if !refuse.Load() {
			return nil, nil, false
		}
		req := r.(*kmsg.OffsetCommitRequest)
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		resp.Version = req.Version
		for _, rt := range req.Topics {
			st := kmsg.NewOffsetCommitResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewOffsetCommitResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, kerr.InvalidCommitOffsetSize.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	h := newHistory(e, "crash", 2, 20, 7)
	h.produce(60)
	stop := run(t, e.source("g", index.FormatCanal, []string{"crash"}))
	e.waitTruth(h.tr)
	stop()
	adm := e.admin()
	if c := committed(t, adm, "g"); len(c) != 0 {
		t.Fatalf("committed %v although every commit was refused", c)
	}
	refuse.Store(false)
	st := e.ix.Stats("db1", "table1")
	stale := st.Stale.Load()
	h.produce(40)
	run(t, e.source("g", index.FormatCanal, []string{"crash"}))
	e.waitTruth(h.tr)
	e.waitCommitted("g")
	if st.Stale.Load() == stale {
		t.Error("nothing was replayed: no change became stale")
	}
}

// TestSource_RebalanceTwoConsumersWhileProducing: a second instance joins the group while
// records are produced, then the first leaves; the index ends equal to the truth and every
// partition is committed to its end.
func TestSource_RebalanceTwoConsumersWhileProducing(t *testing.T) {
	e := newEnv(t, 4, "shared")
	h := newHistory(e, "shared", 4, 80, 11)
	h.produce(100)
	a := e.source("g", index.FormatCanal, []string{"shared"})
	stopA := run(t, a)
	h.produce(100)
	b := e.source("g", index.FormatCanal, []string{"shared"})
	run(t, b)
	waitFor(t, "both instances own partitions", func() (bool, string) {
		h.produce(4) // records keep coming while the group rebalances
		la, lb := a.Lag(), b.Lag()
		return len(la) > 0 && len(lb) > 0 && len(la)+len(lb) <= 4, fmt.Sprintf("a %v, b %v", la, lb)
	})
	h.produce(50)
	stopA()
	h.produce(100)
	e.waitTruth(h.tr)
	e.waitCommitted("g")
	if a.Records.Load() == 0 || b.Records.Load() == 0 {
		t.Errorf("records a %d, b %d: both should have applied some", a.Records.Load(), b.Records.Load())
	}
	waitFor(t, "b owns every partition, caught up", func() (bool, string) {
		l := b.Lag()
		return len(l) == 4 && l[tpOf("shared", 0)]+l[tpOf("shared", 1)]+l[tpOf("shared", 2)]+l[tpOf("shared", 3)] == 0, fmt.Sprint(l)
	})
}
