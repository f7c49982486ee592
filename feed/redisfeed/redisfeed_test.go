package redisfeed_test

import (
	"testing"

	"github.com/redstate/redstate/feed"
	"github.com/redstate/redstate/feed/feedtest"
	"github.com/redstate/redstate/feed/redisfeed"
	"github.com/redstate/redstate/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func TestCacheSuite(t *testing.T) {
	t.Run("Standalone", func(t *testing.T) {
		c := redisfeed.New(redistest.SharedStandalone(t).Client(t), "")
		feedtest.RunCacheSuite(t, func(*testing.T) feed.Cache { return c })
	})
	t.Run("Cluster", func(t *testing.T) {
		c := redisfeed.New(redistest.SharedCluster(t).Client(t), "")
		feedtest.RunCacheSuite(t, func(*testing.T) feed.Cache { return c })
	})
}
