package lease_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redstate/redstate/internal/lease"
)

// A single-leader job: every instance runs the same Leader; the one holding the lease runs the
// job, with a context that ends when the lease is lost, and passes its fence to its writes. The
// store here is the memory one; a deployment passes lease.NewRedis(client, lease.RedisOptions{}).
func ExampleLeader() {
	store := lease.NewMemory(nil)
	leader := lease.Leader{
		Store: store,
		Keys:  lease.Keys{Lease: "queue:{scheduler}:lease", Fence: "queue:{scheduler}:fence"},
		TTL:   10 * time.Second,
	}
	ctx, stop := context.WithCancel(context.Background())
	err := leader.Run(ctx, func(ctx context.Context, g lease.Grant) error {
		holder, _ := store.Holder(ctx, leader.Keys)
		fmt.Println("leading:", holder == g.Token, "fenced:", g.Fence > 0)
		stop() // a real job works until ctx ends
		<-ctx.Done()
		return nil
	})
	holder, _ := store.Holder(context.Background(), leader.Keys)
	fmt.Println("stopped:", err, "released:", holder == "")
	// Output:
	// leading: true fenced: true
	// stopped: <nil> released: true
}
