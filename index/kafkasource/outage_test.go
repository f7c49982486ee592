package kafkasource_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/redistest"
)

// TestSource_StoreOutageCommitsNothingUnapplied: while Redis is down the records are read but
// not applied, the source reports the failure and commits nothing past what was applied; once
// Redis is back they are read again and applied.
func TestSource_StoreOutageCommitsNothingUnapplied(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "outage"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	srv := redistest.StartStandalone(t, redistest.WithAppendOnly(true))
	e := newEnvWith(t, c.ListenAddrs(), srv.Client(t))
	const es = int64(1_700_000_000_000)
	e.produce("outage", 0, canal("INSERT", es, 1, rowJSON(1, state{72, 501}, "1"), rowJSON(2, state{72, 501}, "1")))
	src := e.source("g", index.FormatCanal, []string{"outage"})
	run(t, src)
	e.waitTruth(truth{1: {72, 501}, 2: {72, 501}})
	e.waitCommitted("g")
	srv.Stop(t)
	e.produce("outage", 0, canal("UPDATE", es, 2, rowJSON(1, state{72, 502}, "1")), canal("DELETE", es, 2, rowJSON(2, state{72, 501}, "1")))
	waitFor(t, "the failure reported", func() (bool, string) { return src.Failure() != "", "no failure" })
	if got := committed(t, e.admin(), "g")[tpOf("outage", 0)]; got != 1 {
		t.Errorf("committed offset %d during the outage, want 1 (nothing past the applied record)", got)
	}
	srv.Restart(t)
	e.waitTruth(truth{1: {72, 502}, 2: nil})
	e.waitCommitted("g")
	waitFor(t, "the failure cleared", func() (bool, string) { return src.Failure() == "", src.Failure() })
}
