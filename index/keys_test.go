package index_test

import (
	"testing"

	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/memindex"
)

// TestSourceKeys_Pinned pins every Redis key a change source keeps its state under, byte for
// byte, as the sources built them before index/keys.go held them (pgsource inline,
// mysqlsource in its own keys.go): a renamed key would orphan a deployment's positions,
// snapshots and leases.
func TestSourceKeys_Pinned(t *testing.T) {
	spec := index.TableSpec{DB: "shop", Table: "items", Key: "id", Columns: []index.Column{{Name: "id", Type: index.TypeLong}, {Name: "las", Type: index.TypeInt}},
		Dimensions: [][]index.Part{{{Code: "las", Column: "las"}}}}
	ix, err := index.New(memindex.New(), []index.TableSpec{spec}, index.Options{Namespace: "nsq-", Prefix: index.DefaultPrefix})
	if err != nil {
		t.Fatal(err)
	}
	prefix := ix.BlockKeys().SourcePrefix()
	if prefix != "nsq-las_im_data_sync:source:" {
		t.Fatalf("SourcePrefix = %q", prefix)
	}
	pg := ix.BlockKeys().Postgres(index.DefaultSlot)
	my := ix.BlockKeys().MySQL()
	for _, c := range []struct{ got, want string }{
		{pg.Position, "nsq-las_im_data_sync:source:pg:redstate_index:position"},
		{pg.Snapshot, "nsq-las_im_data_sync:source:pg:redstate_index:snapshot"},
		{pg.Backfill, "nsq-las_im_data_sync:source:pg:redstate_index:backfill"},
		{my.Position, "nsq-las_im_data_sync:source:{mysql}:position"},
		{my.Snapshot, "nsq-las_im_data_sync:source:{mysql}:snapshot"},
		{my.Progress, "nsq-las_im_data_sync:source:{mysql}:snapshot-progress"},
		{my.Lease, "nsq-las_im_data_sync:source:{mysql}:lease"},
		{my.Fence, "nsq-las_im_data_sync:source:{mysql}:fence"},
	} {
		if c.got != c.want {
			t.Errorf("source key %q, want %q", c.got, c.want)
		}
	}
}
