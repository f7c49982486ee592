package cli

import (
	"strings"
	"testing"

	"github.com/redstate/redstate/redistest"
)

// TestIndexMigrateLayout: rows written by a release before layout 2 (a kid- relation key, one
// with its layout-1 version key, one whose version key expired) are moved into their version
// keys by `index migrate-layout`, which then marks the table; a second run has nothing to do.
func TestIndexMigrateLayout(t *testing.T) {
	srv := redistest.StartStandalone(t)
	client := srv.Client(t)
	ctx := t.Context()
	base := "{las_im_data_sync:db1:table1}:"
	client.Set(ctx, base+"fil-1", "m00000001|2025-11-09T10:30:00Z", 0)
	client.Set(ctx, base+"kid-1", `["`+base+`las-1:cat-1:bra-~","`+base+`las-1:cat-1"]`, 0)
	client.Set(ctx, base+"kid-2", `["`+base+`las-2:cat-1:bra-~","`+base+`las-2:cat-1"]`, 0)
	args := []string{"index", "migrate-layout", "--config", writeConfig(t, indexConfig), "--redis", srv.URL}
	out, err := run(t, args...)
	if err != nil || !strings.Contains(out, "db1.table1: 2 rows moved, now layout 2") {
		t.Fatalf("migrate-layout: %v\n%s", err, out)
	}
	if v := client.Get(ctx, base+"fil-1").Val(); v != "m00000001|2025-11-09T10:30:00Z|las-1:cat-1:bra-~|las-1:cat-1" {
		t.Errorf("row 1's version key = %q", v)
	}
	if v := client.Get(ctx, base+"fil-2").Val(); !strings.HasPrefix(v, "|") || !strings.HasSuffix(v, "|las-2:cat-1:bra-~|las-2:cat-1") {
		t.Errorf("row 2's version key = %q, want the version \"\", the migration's time and its relation", v)
	}
	if n := client.Exists(ctx, base+"kid-1", base+"kid-2").Val(); n != 0 {
		t.Errorf("%d relation keys left", n)
	}
	if client.Get(ctx, base+"layout").Val() != "2" {
		t.Error("table not marked layout 2")
	}
	if out, err := run(t, args...); err != nil || !strings.Contains(out, "db1.table1: already layout 2") {
		t.Fatalf("second migrate-layout: %v\n%s", err, out)
	}
}
