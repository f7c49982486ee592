package kafkasource_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/redstate/redstate/index"
)

// TestSource_ReportsLag: while fetches are held after the first one (which returns one record
// batch), the lag is the records behind the one applied; once released, it falls to 0.
func TestSource_ReportsLag(t *testing.T) {
	e := newEnv(t, 1, "lag")
	const n = 30
	tr := truth{}
	for i := range n {
		e.produce("lag", 0, canal("INSERT", 1_700_000_000_000, int64(i), rowJSON(i+1, state{72, 500}, "1"))) // one batch each
		tr[i+1] = &state{72, 500}
	}
	release := make(chan struct{})
	var releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
	var fetches atomic.Int64
	e.cluster.ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		e.cluster.KeepControl()
		if fetches.Add(1) > 1 {
			<-release
		}
		return nil, nil, false
	})
	src := e.source("g", index.FormatCanal, []string{"lag"}, kgo.FetchMaxPartitionBytes(1))
	run(t, src)
	waitFor(t, "lag after the first record", func() (bool, string) {
		return src.Records.Load() == 1 && src.Lag()[tpOf("lag", 0)] == n-1, fmt.Sprintf("records %d, lag %v", src.Records.Load(), src.Lag())
	})
	releaseOnce.Do(func() { close(release) })
	e.waitTruth(tr)
	waitFor(t, "lag 0", func() (bool, string) {
		l, ok := src.Lag()[tpOf("lag", 0)]
		return ok && l == 0, fmt.Sprint(src.Lag())
	})
}
