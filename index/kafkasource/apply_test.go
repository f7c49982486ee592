package kafkasource_test

import (
	"fmt"
	"testing"

	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/kafkasource"
)

// TestSource_SmallApplyBatchesKeepPartitionOrder: with one record's changes per Indexer.Apply
// (each parsed while the one before is in Redis) and poison records between them, every
// partition ends as delivered, the poison is dead-lettered and every offset is committed.
func TestSource_SmallApplyBatchesKeepPartitionOrder(t *testing.T) {
	e := newEnv(t, 3, "batches")
	tr := canalScenario(e, "batches", 3)
	const es = int64(1_700_000_000_000)
	e.produce("batches", 1, []byte("{not json"),
		canal("UPDATE", es, 50, rowJSON(12, state{72, 700}, "1")),
		[]byte(`{"hello":"world"}`),
		canal("UPDATE", es, 51, rowJSON(12, state{72, 701}, "1")))
	tr[12] = &state{72, 701}
	src := e.sourceWith("g", index.FormatAuto, []string{"batches"}, func(o *kafkasource.Options) { o.ApplyBatch = 1 })
	run(t, src)
	e.waitTruth(tr)
	e.waitCommitted("g")
	waitFor(t, "records counted", func() (bool, string) {
		return src.Records.Load() == 29 && src.DeadLetters.Load() == 2, fmt.Sprint(src.Records.Load(), " records, ", src.DeadLetters.Load(), " dead letters")
	})
}
