package indextest

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/redstate/redstate/index"
)

// canalBatch is one real Canal batch as its MQ converter delivers it: five flat messages that
// share the batch id and the binlog's one-second es (INSERT A,B; UPDATE B → cat 502; UPDATE
// A,B → 503; UPDATE B → 504; DELETE A). In delivery order A ends deleted and B in cat 504.
var canalBatch = []string{
	canalMessage("INSERT", canalRow(1, 501), canalRow(2, 501)),
	canalMessage("UPDATE", canalRow(2, 502)),
	canalMessage("UPDATE", canalRow(1, 503), canalRow(2, 503)),
	canalMessage("UPDATE", canalRow(2, 504)),
	canalMessage("DELETE", canalRow(1, 503)),
}

func canalRow(id, cat int) string {
	return fmt.Sprintf(`{"id":"%d","provinceId":"1","cityId":"72","lastAddrId":"72","categoryId":"%d","brandId":"9","yn":"1"}`, id, cat)
}

func canalMessage(typ string, rows ...string) string {
	return fmt.Sprintf(`{"data":[%s],"database":"db1","table":"table1","type":%q,"es":1700000000000,"ts":1700000000321,"id":77,"isDdl":false,"pkNames":["id"]}`,
		strings.Join(rows, ","), typ)
}

// deliver parses events of format delivered from position first on and applies them.
func deliver(t *testing.T, ix *index.Indexer, format string, first uint64, events ...string) index.Result {
	t.Helper()
	raw := make([]json.RawMessage, len(events))
	for i, e := range events {
		raw[i] = json.RawMessage(e)
	}
	p, err := index.ParseEventList(format, raw, first)
	if err != nil || len(p.Errors) > 0 {
		t.Fatalf("parse: %v %v", err, p.Errors)
	}
	return apply(t, ix, p.Changes...)
}

// batchOutcome is where the rows of the Canal batch are: the categories of las 72 holding ids.
func batchOutcome(t *testing.T, ix *index.Indexer) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, cat := range []int{501, 502, 503, 504} {
		for id := range query(t, ix, lc(72, cat)) {
			out[fmt.Sprint(cat)] = append(out[fmt.Sprint(cat)], id)
		}
	}
	return out
}

// deliveryOrderTests are the conformance tests of delivery positions: the messages of one
// Canal batch (and other changes whose source gives no total order) are ordered by where they
// were delivered.
func deliveryOrderTests(newStore NewStore, f Features) map[string]func(t *testing.T) {
	want := map[string][]string{"504": {"2"}}
	return map[string]func(t *testing.T){
		"CanalBatchInOneDeliveryEndsAsInOrder": func(t *testing.T) {
			ix := newIndexer(t, newStore(t), f)
			res := deliver(t, ix, index.FormatCanal, 0, canalBatch...)
			if res.Applied != 7 || res.Stale != 0 {
				t.Fatalf("result %+v, want 7 applied", res)
			}
			if got := batchOutcome(t, ix); !reflect.DeepEqual(got, want) {
				t.Fatalf("rows by category %v, want %v (A deleted, B in 504)", got, want)
			}
			// The whole batch delivered again (a retried POST, a consumer replaying from the
			// batch's first offset) is stale throughout and changes nothing.
			if res := deliver(t, ix, index.FormatCanal, 0, canalBatch...); res.Applied != 0 || res.Stale != 7 {
				t.Fatalf("redelivery %+v, want 7 stale", res)
			}
			if got := batchOutcome(t, ix); !reflect.DeepEqual(got, want) {
				t.Fatalf("after redelivery %v, want %v", got, want)
			}
		},
		"CanalBatchAcrossDeliveriesWithOffsets": func(t *testing.T) {
			ix := newIndexer(t, newStore(t), f)
			// The batch's tail arrives first (offset 3), then its head (offset 0): the head's
			// changes are older than the tail's and converge to the in-order result.
			deliver(t, ix, index.FormatCanal, 3, canalBatch[3:]...)
			deliver(t, ix, index.FormatCanal, 0, canalBatch[:3]...)
			if got := batchOutcome(t, ix); !reflect.DeepEqual(got, want) {
				t.Fatalf("rows by category %v, want %v", got, want)
			}
		},
		"DebeziumWithoutBinlogPositionOrderedByDelivery": func(t *testing.T) {
			ix := newIndexer(t, newStore(t), f)
			ev := func(op string, cat int) string {
				return fmt.Sprintf(`{"before":null,"after":%s,"source":{"db":"db1","table":"table1","ts_ms":1700000000000,"change_lsn":"00000027:00000758:0003"},"op":%q,"ts_ms":1700000000100}`,
					canalRow(1, cat), op)
			}
			res := deliver(t, ix, index.FormatDebezium, 0, ev("c", 501), ev("u", 502), ev("u", 503))
			if res.Applied != 3 {
				t.Fatalf("result %+v, want 3 applied", res)
			}
			if got := batchOutcome(t, ix); !reflect.DeepEqual(got, map[string][]string{"503": {"1"}}) {
				t.Fatalf("rows by category %v, want row 1 in 503", got)
			}
		},
		"NativeEqualVersionsForDifferentChangesFail": func(t *testing.T) {
			store := newStore(t)
			ix := newIndexer(t, store, f)
			a, b := upsert(5, row(1, 72, 501, 1, "a")), upsert(5, row(1, 72, 502, 1, "b"))
			res := apply(t, ix, a, a, b)
			if res.Applied != 1 || res.Stale != 1 || res.Failed != 1 || len(res.Errors) != 1 || !strings.Contains(res.Errors[0], "two different changes carry version") {
				t.Fatalf("result %+v: want the duplicate stale and the different change of the same version failed", res)
			}
			dump, err := store.Dump(context.Background(), ix.DeadLetterKey())
			if err != nil || dump[ix.DeadLetterKey()] != "list:1" {
				t.Fatalf("dead letters = %v, %v; want the conflicting change", dump, err)
			}
			// Native time versions without a position take their delivery position.
			ev := func(cat int) string {
				return fmt.Sprintf(`{"db":"db1","table":"table1","op":"upsert","row":%s,"version":{"tsMs":1700000000000,"batch":3}}`, canalRow(2, cat))
			}
			if res := deliver(t, ix, index.FormatNative, 0, ev(501), ev(502)); res.Applied != 2 {
				t.Fatalf("native time versions in one delivery: %+v, want 2 applied", res)
			}
			if got := query(t, ix, lc(72, 502)); got["2"] == nil {
				t.Fatalf("row 2 not in cat 502: %v", keysOf(got))
			}
		},
	}
}
