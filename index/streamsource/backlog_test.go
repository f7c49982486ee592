package streamsource_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/indextest"
	"github.com/redstate/redstate/index/redisindex"
	"github.com/redstate/redstate/index/streamsource"
	"github.com/redstate/redstate/redistest"
)

// TestSource_BacklogIsUndeliveredPlusPending: a stream's backlog is what its group has not
// applied: entries never delivered plus entries delivered and not acknowledged; a stream that
// does not exist yet has none.
func TestSource_BacklogIsUndeliveredPlusPending(t *testing.T) {
	client := redistest.SharedStandalone(t).Client(t)
	ctx := context.Background()
	prefix := indextest.UniquePrefix()
	ix, err := index.New(redisindex.New(client), []index.TableSpec{indextest.SeedTable(false)}, index.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	stream, missing := prefix+".db1.table1", prefix+".db1.none"
	for i := 1; i <= 5; i++ {
		if err := client.XAdd(ctx, &redis.XAddArgs{Stream: stream, Values: []string{fmt.Sprintf(`{"id":%d}`, i), envelope(i, 70+i, 100+i)}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := client.XGroupCreateMkStream(ctx, stream, index.DefaultStreamGroup, "0").Err(); err != nil {
		t.Fatal(err)
	}
	// Three delivered, one of them acknowledged: 2 pending + 2 never delivered.
	msgs := client.XReadGroup(ctx, &redis.XReadGroupArgs{Group: index.DefaultStreamGroup, Consumer: "c", Streams: []string{stream, ">"}, Count: 3}).Val()[0].Messages
	if err := client.XAck(ctx, stream, index.DefaultStreamGroup, msgs[0].ID).Err(); err != nil {
		t.Fatal(err)
	}
	src, err := streamsource.New(ix, streamsource.Options{Client: client, Streams: []string{stream, missing}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := src.Backlog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[stream] != 4 {
		t.Fatalf("backlog %v, want %s: 4 and nothing for the missing stream", got, stream)
	}
}
