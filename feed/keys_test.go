package feed_test

import (
	"strings"
	"testing"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/feed"
)

// TestKeys_UnreadPartsComposeTheSameKeys: the keys the fan-out script joins from UnreadParts
// are the keys Unread returns, on standalone and Cluster, with and without a prefix, and a
// user's keys share the user's hash tag on Cluster.
func TestKeys_UnreadPartsComposeTheSameKeys(t *testing.T) {
	for _, cluster := range []bool{false, true} {
		for _, prefix := range []string{"", "app1:"} {
			k := feed.NewKeys(redstate.Prefix("", prefix), cluster)
			before, after := k.UnreadParts(1001)
			if got, want := before+"2001"+after, k.Unread(2001, 1001); got != want {
				t.Errorf("cluster=%v unread: %q, want %q", cluster, got, want)
			}
		}
	}
	k := feed.NewKeys(redstate.Prefix("", "p:"), true)
	for _, key := range []string{k.Read(7), k.Unread(7, 9), k.Built(7)} {
		if want := "{7}"; !strings.Contains(key, want) {
			t.Errorf("cluster key %q lacks the user's hash tag %s", key, want)
		}
	}
}
