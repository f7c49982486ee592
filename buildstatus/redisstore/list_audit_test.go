package redisstore_test

import (
	"strings"
	"testing"

	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/buildstatus/storetest"
	"github.com/redstate/redstate/redistest"
)

// TestListAudit_NeverUsesKEYS: docs/buildstatus.md "Listing all builds walks SCAN MATCH … it
// never uses KEYS". A dedicated server's command statistics after listing every page (and a
// project listing) show SCAN calls and no KEYS call.
func TestListAudit_NeverUsesKEYS(t *testing.T) {
	client := redistest.StartStandalone(t).Client(t)
	ctx := t.Context()
	s := newStoreOn(client)(t, 0)
	for i := range 25 {
		project := "p-a"
		if i%2 == 0 {
			project = "p-b"
		}
		if _, err := s.Save(ctx, storetest.SampleDoc(storetest.NewBuildID(), project), buildstatus.SaveOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	seen, cursor := 0, ""
	for {
		p, err := s.List(ctx, cursor, 4)
		if err != nil {
			t.Fatal(err)
		}
		seen += len(p.Builds)
		if p.Cursor == "" {
			break
		}
		cursor = p.Cursor
	}
	if seen != 25 {
		t.Fatalf("List walked %d builds, want 25", seen)
	}
	if _, err := s.ListProject(ctx, "p-a", "", 100); err != nil {
		t.Fatal(err)
	}
	stats, err := client.Info(ctx, "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stats, "cmdstat_keys:") {
		t.Fatalf("listing used KEYS:\n%s", stats)
	}
	if !strings.Contains(stats, "cmdstat_scan:") {
		t.Fatalf("listing did not use SCAN:\n%s", stats)
	}
}
