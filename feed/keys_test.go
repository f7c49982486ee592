package feed_test

import (
	"testing"

	"github.com/redstate/redstate/feed"
)

// TestKeys_ScriptPartsComposeTheSameKeys: the keys a script joins from ScriptParts are the keys
// Read, Unread and Counts return, on standalone and Cluster, with and without a prefix.
func TestKeys_ScriptPartsComposeTheSameKeys(t *testing.T) {
	for _, cluster := range []bool{false, true} {
		for _, prefix := range []string{"", "app1:"} {
			k := feed.NewKeys(prefix, cluster)
			p := k.ScriptParts()
			u, a := int64(2001), int64(1001)
			user := p.TagOpen + "2001" + p.TagClose
			if got, want := p.ReadPrefix+user, k.Read(u); got != want {
				t.Errorf("cluster=%v read: %q, want %q", cluster, got, want)
			}
			if got, want := p.UnreadPrefix+user+":1001", k.Unread(u, a); got != want {
				t.Errorf("cluster=%v unread: %q, want %q", cluster, got, want)
			}
			if got, want := p.CountsPrefix+user, k.Counts(u); got != want {
				t.Errorf("cluster=%v counts: %q, want %q", cluster, got, want)
			}
		}
	}
}
