package kafkasource_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/kafkasource"
)

// canalScenario produces, to every partition of topic, three Canal batches over three rows of
// its own (ids p*10+1..3), and returns the truth. Batch 1 is five flat messages sharing one id
// and es (INSERT a,b; UPDATE b; UPDATE a,b; UPDATE b; DELETE a), several rows per message;
// batch 2 has an earlier es (a statement that began before batch 1's) and re-inserts a,
// inserts c and logically deletes it; batch 3 comes from a restarted Canal (batch id 1) and
// carries a DDL message. Only the partition order orders them all.
func canalScenario(e *env, topic string, partitions int32) truth {
	const es = int64(1_700_000_000_000)
	tr := truth{}
	for p := range partitions {
		a, b, c := int(p)*10+1, int(p)*10+2, int(p)*10+3
		r := func(id, cat int, yn string) string { return rowJSON(id, state{las: 72, cat: cat}, yn) }
		e.produce(topic, p,
			canal("INSERT", es, 41, r(a, 501, "1"), r(b, 501, "1")),
			canal("UPDATE", es, 41, r(b, 502, "1")),
			canal("UPDATE", es, 41, r(a, 503, "1"), r(b, 503, "1")),
			canal("UPDATE", es, 41, r(b, 504, "1")),
			canal("DELETE", es, 41, r(a, 503, "1")))
		e.produce(topic, p,
			canal("INSERT", es-1000, 42, r(c, 600, "1"), r(a, 601, "1")),
			canal("UPDATE", es-1000, 42, r(c, 600, "0")))
		e.produce(topic, p,
			canal("UPDATE", es, 1, r(b, 505, "1")),
			fmt.Appendf(nil, `{"data":null,"database":"db1","table":"table1","type":"ALTER","es":%d,"id":1,"isDdl":true,"sql":"ALTER TABLE table1 ADD x INT"}`, es))
		tr[a], tr[b], tr[c] = &state{72, 601}, &state{72, 505}, nil
	}
	return tr
}

// TestSource_CanalBatchesOrderedByOffset: Canal flat messages sharing a batch id and es,
// several rows each, an es going backwards and a batch id restarting end as delivered in each
// partition; the version of a row is its last record's offset and row index.
func TestSource_CanalBatchesOrderedByOffset(t *testing.T) {
	e := newEnv(t, 3, "canal")
	tr := canalScenario(e, "canal", 3)
	src := e.source("g", index.FormatCanal, []string{"canal"})
	run(t, src)
	e.waitTruth(tr)
	e.waitCommitted("g")
	// Row 2 (partition 0) was last changed by the first message of batch 3, at offset 7.
	keys, _ := e.ix.Keys("db1", "table1")
	d, err := e.store.Dump(context.Background(), keys.Version("2"))
	if err != nil {
		t.Fatal(err)
	}
	if v := d[keys.Version("2")]; !strings.HasPrefix(v, "string:"+string(index.LogVersion(7, 0))+"|") {
		t.Errorf("version of row 2 = %q, want %s", v, index.LogVersion(7, 0))
	}
	if n := e.ix.Skipped(); n != 3 {
		t.Errorf("skipped = %d, want 3 (one DDL message per partition)", n)
	}
	waitFor(t, "records counted", func() (bool, string) {
		return src.Records.Load() == 27, fmt.Sprint(src.Records.Load())
	})
}

// debezium is a Debezium envelope of the seed table: op c/u/d, the row image, and a source
// with a binlog position (pos > 0) or only a time (pos 0).
func debezium(op string, id int, s state, pos, tsMs int64, wrapped bool) []byte {
	img := fmt.Sprintf(`{"id":%d,"provinceId":1,"cityId":72,"lastAddrId":%d,"categoryId":%d,"brandId":9,"name":"n%d","yn":1}`, id, s.las, s.cat, id)
	before, after := "null", img
	if op == "d" {
		before, after = img, "null"
	}
	source := fmt.Sprintf(`{"db":"db1","table":"table1","ts_ms":%d}`, tsMs)
	if pos > 0 {
		source = fmt.Sprintf(`{"db":"db1","table":"table1","ts_ms":%d,"file":"mysql-bin.000003","pos":%d,"row":0}`, tsMs, pos)
	}
	ev := fmt.Sprintf(`{"before":%s,"after":%s,"source":%s,"op":%q,"ts_ms":%d}`, before, after, source, op, tsMs+5)
	if wrapped {
		ev = fmt.Sprintf(`{"schema":{"type":"struct","name":"db1.table1.Envelope","optional":false},"payload":%s}`, ev)
	}
	return []byte(ev)
}

// TestSource_DebeziumBareWrappedAndTombstones: with format auto over a Debezium and a Canal
// topic, bare and {schema,payload} envelopes apply, tombstones are ignored, events with only a
// time are ordered by offset and events with a binlog position keep it as their version.
func TestSource_DebeziumBareWrappedAndTombstones(t *testing.T) {
	e := newEnv(t, 1, "dbz", "flat")
	const ts = int64(1_700_000_000_000)
	e.produce("dbz", 0,
		debezium("c", 1, state{72, 701}, 0, ts, true),
		debezium("u", 1, state{72, 702}, 0, ts, false), // same ts_ms: the offset orders it
		debezium("c", 2, state{72, 701}, 0, ts, false),
		debezium("d", 2, state{72, 701}, 0, ts, true),
		nil, // the tombstone after the delete
		debezium("c", 3, state{73, 801}, 100, ts, true),
		debezium("u", 3, state{73, 802}, 200, ts, false),
		[]byte(`{"schema":null,"payload":null}`), // a wrapped tombstone-like value: skipped
	)
	e.produce("flat", 0, canal("INSERT", ts, 5, rowJSON(4, state{74, 901}, "1")))
	src := e.source("g", index.FormatAuto, []string{"dbz", "flat"})
	run(t, src)
	e.waitTruth(truth{1: {72, 702}, 2: nil, 3: {73, 802}, 4: {74, 901}})
	e.waitCommitted("g")
	if n := src.Tombstones.Load(); n != 1 {
		t.Errorf("tombstones = %d, want 1", n)
	}
	if n := src.DeadLetters.Load(); n != 0 {
		t.Errorf("dead letters = %d, want 0", n)
	}
	keys, _ := e.ix.Keys("db1", "table1")
	d, _ := e.store.Dump(context.Background(), keys.Version("3"))
	if v := d[keys.Version("3")]; !strings.HasPrefix(v, "string:"+string(index.BinlogVersion(3, 200, 0))) {
		t.Errorf("version of row 3 = %q, want the binlog position %s", v, index.BinlogVersion(3, 200, 0))
	}
}

// TestSource_DuplicatesAreStale: a Canal batch written twice in a row (a producer's resend)
// ends as written once; the same records read again by another group change nothing.
func TestSource_DuplicatesAreStale(t *testing.T) {
	e := newEnv(t, 1, "dup")
	const es = int64(1_700_000_000_000)
	batch := [][]byte{
		canal("INSERT", es, 9, rowJSON(1, state{72, 501}, "1"), rowJSON(2, state{72, 501}, "1")),
		canal("UPDATE", es, 9, rowJSON(1, state{72, 502}, "1")),
		canal("DELETE", es, 9, rowJSON(2, state{72, 501}, "1")),
	}
	e.produce("dup", 0, batch...)
	e.produce("dup", 0, batch...)
	e.produce("dup", 0, canal("UPDATE", es+1000, 10, rowJSON(1, state{72, 503}, "1")))
	tr := truth{1: {72, 503}, 2: nil}
	run(t, e.source("first", index.FormatCanal, []string{"dup"}))
	e.waitTruth(tr)
	e.waitCommitted("first")
	st := e.ix.Stats("db1", "table1")
	applied, stale := st.Applied.Load(), st.Stale.Load()
	again := e.source("second", index.FormatCanal, []string{"dup"})
	run(t, again)
	waitFor(t, "second group read everything", func() (bool, string) {
		return again.Records.Load() == 7, fmt.Sprint(again.Records.Load())
	})
	e.waitTruth(tr)
	if st.Applied.Load() != applied || st.Stale.Load() != stale+9 {
		t.Errorf("applied %d → %d, stale %d → %d; want applied unchanged and 9 more stale", applied, st.Applied.Load(), stale, st.Stale.Load())
	}
}

// TestSource_PoisonDeadLetteredPartitionGoesOn: records that cannot be parsed are
// dead-lettered with their topic, partition and offset, a change that cannot be converted
// with its record's, and the partition goes on past them.
func TestSource_PoisonDeadLetteredPartitionGoesOn(t *testing.T) {
	e := newEnv(t, 2, "poison")
	const es = int64(1_700_000_000_000)
	e.produce("poison", 1,
		canal("INSERT", es, 1, rowJSON(1, state{72, 501}, "1")),
		[]byte("{not json"),
		[]byte(`{"hello":"world"}`),
		fmt.Appendf(nil, `{"data":[{"id":"5"}],"database":"db9","table":"other","type":"INSERT","es":%d,"id":1,"isDdl":false}`, es), // undeclared: skipped
		canal("UPDATE", es, 1, `{"provinceId":"1"}`), // no key: dead-lettered by the index
		canal("UPDATE", es, 1, rowJSON(1, state{72, 502}, "1")),
	)
	src := e.source("g", index.FormatAuto, []string{"poison"})
	run(t, src)
	e.waitTruth(truth{1: {72, 502}})
	e.waitCommitted("g")
	if n := src.DeadLetters.Load(); n != 2 {
		t.Errorf("dead letters = %d, want 2", n)
	}
	entries, err := e.redis.LRange(context.Background(), e.ix.DeadLetterKey(), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	sources := map[string]bool{}
	for _, raw := range entries {
		var entry struct {
			Source string `json:"source"`
		}
		if err := json.Unmarshal([]byte(raw), &entry); err != nil {
			t.Fatal(err)
		}
		sources[entry.Source] = true
	}
	for _, want := range []string{kafkasource.Where("poison", 1, 1), kafkasource.Where("poison", 1, 2), kafkasource.Where("poison", 1, 4)} {
		if !sources[want] {
			t.Errorf("no dead letter from %s in %v", want, entries)
		}
	}
	if len(entries) != 3 {
		t.Errorf("%d dead letters, want 3: %v", len(entries), entries)
	}
	if n := e.ix.Skipped(); n != 1 {
		t.Errorf("skipped = %d, want 1 (the undeclared table)", n)
	}
}
