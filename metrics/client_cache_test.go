package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/redstate/redstate/redisconn"
)

func TestRegisterClientCache(t *testing.T) {
	m := New()
	st := redisconn.CacheStats{Hits: 7, Misses: 2, Bypassed: 1, Invalidations: 4}
	RegisterClientCache(m, func() redisconn.CacheStats { return st })
	want := `
# HELP redstate_client_cache_reads_total Reads routed to the client-side cache, by result: hit (process memory), miss (Redis, then cached), bypassed (a key this process just wrote, read from Redis).
# TYPE redstate_client_cache_reads_total counter
redstate_client_cache_reads_total{result="bypassed"} 1
redstate_client_cache_reads_total{result="hit"} 7
redstate_client_cache_reads_total{result="miss"} 2
# HELP redstate_client_cache_invalidations_total Keys Redis reported changed to the client-side cache (a whole-cache flush counts one).
# TYPE redstate_client_cache_invalidations_total counter
redstate_client_cache_invalidations_total 4
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "redstate_client_cache_reads_total", "redstate_client_cache_invalidations_total"); err != nil {
		t.Fatal(err)
	}
	RegisterClientCache(nil, func() redisconn.CacheStats { return st }) // a nil Metrics is a no-op
}
