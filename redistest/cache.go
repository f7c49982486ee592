package redistest

import (
	"testing"

	"github.com/redstate/redstate/redisconn"
)

// NewCache returns a client-side cache (redisconn.Cache) on the topology o selects, with the
// cache turned on whatever o.ClientCache.Enabled says, closed in t.Cleanup.
func NewCache(t testing.TB, o redisconn.Options) *redisconn.Cache {
	t.Helper()
	o.ClientCache.Enabled = true
	c, err := redisconn.NewCache(o)
	if err != nil {
		t.Fatalf("redistest: client-side cache on %s: %v", redisconn.Describe(o), err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}
