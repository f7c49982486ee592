package feed_test

import (
	"strings"
	"testing"

	"github.com/redstate/redstate/feed"
)

func TestConfig_DefaultsAreValid(t *testing.T) {
	if err := feed.DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestConfig_ValidateReportsEveryProblem(t *testing.T) {
	c := feed.DefaultConfig()
	c.HybridThreshold, c.FanOutConcurrency, c.RepairInterval, c.KeyPrefix = 0, 0, 0, "bad*prefix"
	c.Resilience.FailureRateThreshold = 101
	err := c.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, key := range []string{"feed.hybrid-threshold", "feed.fanout-concurrency", "feed.repair-interval", "feed.key-prefix", "feed.resilience.failure-rate-threshold"} {
		if !strings.Contains(err.Error(), key+":") {
			t.Errorf("%s missing from %v", key, err)
		}
	}
}

func TestSQLConfig_ValidateNamesEveryBadKey(t *testing.T) {
	c := feed.DefaultConfig()
	if !c.SQL.IsDefault() {
		t.Fatal("the default feed.sql is not IsDefault")
	}
	c.SQL.Posts.Table, c.SQL.Posts.Created, c.SQL.Follows.Author = "Blog; DROP TABLE x", "", "follow-user"
	c.SQL.Follows.Table, c.SQL.TimeZone = "blog_read", "Mars/Olympus"
	err := c.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, key := range []string{"feed.sql.posts.table", "feed.sql.posts.created", "feed.sql.follows.author", "feed.sql.follows.table", "feed.sql.time-zone"} {
		if !strings.Contains(err.Error(), key+":") {
			t.Errorf("%s missing from %v", key, err)
		}
	}
}
