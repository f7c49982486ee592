package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/redistest"
)

// TestIndexResnapshot_DeletesPositionAndLease: without --yes the command refuses and deletes
// nothing; with it, the MySQL source's position, snapshot, progress and lease (under the
// namespace) are gone, the fence kept, and the output names verify --repair.
func TestIndexResnapshot_DeletesPositionAndLease(t *testing.T) {
	srv := redistest.StartStandalone(t)
	client := srv.Client(t)
	ctx := context.Background()
	keys := index.NewBlockKeys(redstate.Prefix("prod-", index.DefaultPrefix)).MySQL()
	client.Set(ctx, keys.Position, "binlog.000007:4242", 0)
	client.Set(ctx, keys.Snapshot, "binlog.000002:100", 0)
	client.HSet(ctx, keys.Progress, "db1.table1", "\x00done")
	client.Set(ctx, keys.Lease, "host-1-abc", 0)
	client.Set(ctx, keys.Fence, "17", 0)
	base := []string{"--config", writeConfig(t, indexConfig), "--redis", srv.URL, "--namespace", "prod-"}

	if out, err := run(t, append([]string{"index", "resnapshot", "--source", "postgres", "--yes"}, base...)...); err == nil || !strings.Contains(err.Error(), "--source must be mysql") {
		t.Fatalf("--source postgres: %v\n%s", err, out)
	}
	out, err := run(t, append([]string{"index", "resnapshot", "--source", "mysql"}, base...)...)
	if err == nil || !strings.Contains(err.Error(), "add --yes") || !strings.Contains(err.Error(), keys.Position) {
		t.Fatalf("without --yes: %v\n%s", err, out)
	}
	if n := client.Exists(ctx, keys.Position, keys.Lease).Val(); n != 2 {
		t.Fatalf("without --yes %d of the position and lease remain", n)
	}
	out, err = run(t, append([]string{"index", "resnapshot", "--source", "mysql", "--yes"}, base...)...)
	if err != nil {
		t.Fatalf("resnapshot: %v\n%s", err, out)
	}
	for _, want := range []string{"binlog.000007:4242", "binlog.000002:100", "1 tables", "host-1-abc", "redstate index verify --source mysql --repair"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if n := client.Exists(ctx, keys.Position, keys.Snapshot, keys.Progress, keys.Lease).Val(); n != 0 {
		t.Fatalf("%d keys remain after resnapshot", n)
	}
	if f := client.Get(ctx, keys.Fence).Val(); f != "17" {
		t.Fatalf("fence = %q, want it kept (fences only grow)", f)
	}
}
