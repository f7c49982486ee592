package mysqlsource

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/internal/rediserr"
)

// Resnapshotted is what Resnapshot deleted; "" (0) for what did not exist.
type Resnapshotted struct {
	// Position is the recorded position that was deleted.
	Position string
	// Snapshot is the position of the snapshot that was deleted.
	Snapshot string
	// ProgressTables counts the tables of the deleted snapshot progress.
	ProgressTables int64
	// LeaseHolder is the token of the instance that held the binlog lease.
	LeaseHolder string
}

// Resnapshot makes the source take a new snapshot: one script deletes the recorded position,
// the snapshot position and progress, and the binlog lease. A running reader's next fenced
// write or lease renewal then fails, it acquires the lease again (as may another instance),
// finds no position and snapshots; with no instance running, the next one to start does. Rows
// deleted from the tables between the last applied position and the new snapshot are in no
// stream: index verify --repair removes them. Errors: EUNAVAILABLE.
func Resnapshot(ctx context.Context, client redis.UniversalClient, keys Keys) (Resnapshotted, error) {
	v, err := resnapshotScript.Run(ctx, client, []string{keys.Position, keys.Snapshot, keys.Progress, keys.Lease}).Slice()
	if err != nil {
		return Resnapshotted{}, rediserr.Map(err, "resnapshot: delete the MySQL source's position")
	}
	if len(v) != 4 {
		return Resnapshotted{}, fmt.Errorf("resnapshot: unexpected reply %v", v)
	}
	r := Resnapshotted{}
	r.Position, _ = v[0].(string)
	r.Snapshot, _ = v[1].(string)
	r.ProgressTables, _ = v[2].(int64)
	r.LeaseHolder, _ = v[3].(string)
	return r, nil
}
