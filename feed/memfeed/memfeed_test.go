package memfeed_test

import (
	"testing"

	"github.com/redstate/redstate/feed"
	"github.com/redstate/redstate/feed/feedtest"
	"github.com/redstate/redstate/feed/memfeed"
)

func TestCacheSuite(t *testing.T) {
	feedtest.RunCacheSuite(t, func(*testing.T) feed.Cache { return memfeed.New() })
}
