package redistest

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/redisconn"
)

// RunOnTopologies runs one subtest on the shared standalone server and one on the shared
// Cluster, each with a client of that topology whose Options reach the same servers.
func TestRunOnTopologies_StandaloneThenCluster(t *testing.T) {
	var ran []string
	RunOnTopologies(t, func(t *testing.T, client redis.UniversalClient) {
		ran = append(ran, t.Name())
		ctx := context.Background()
		if err := client.Set(ctx, "topology", "1", 0).Err(); err != nil {
			t.Fatal(err)
		}
		tp := Topologies()[len(ran)-1]
		if got := redisconn.IsCluster(client); got != tp.Cluster {
			t.Errorf("%s: IsCluster(client) = %v, want %v", tp.Name, got, tp.Cluster)
		}
		other, err := redisconn.New(tp.Options(t))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = other.Close() }()
		if redisconn.IsCluster(other) != tp.Cluster {
			t.Errorf("%s: Options reach another topology", tp.Name)
		}
		if err := other.Set(ctx, "topology", "2", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if got, err := client.Get(ctx, "topology").Result(); err != nil || got != "2" {
			t.Errorf("%s: a write through Options' client is not seen through Client's: %q, %v", tp.Name, got, err)
		}
	})
	want := []string{t.Name() + "/Standalone", t.Name() + "/Cluster"}
	if len(ran) != len(want) || ran[0] != want[0] || ran[1] != want[1] {
		t.Fatalf("ran %v, want %v", ran, want)
	}
}
