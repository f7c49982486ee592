package buildstatus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/buildstatus"
	"github.com/redstate/redstate/buildstatus/redisstore"
)

// redisAddr is your Redis; the tests start their own.
var redisAddr = "127.0.0.1:6379"

// The registry embedded in a Go program with its own go-redis client: save a build, read it,
// report one platform's progress by a JSON merge patch, and watch the changes as they happen.
func Example() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer client.Close()
	store, err := redisstore.New(client, redisstore.Options{}) // the seed's keys, 30-day TTL
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	const id = "7b3f4a1e-2c5d-4e6f-8a9b-0c1d2e3f4a5b"
	watch, stop := context.WithTimeout(ctx, time.Minute) // the stream ends with watch
	defer stop()
	events, err := store.Watch(watch, id) // subscribed once Watch returns
	if err != nil {
		log.Fatal(err)
	}

	created, _ := buildstatus.ParseDateTime("2026-11-28T10:00:00")
	_, err = store.Save(ctx, &buildstatus.PublishResponse{
		BuildID: id, ProjectID: "example-project", Platforms: []string{"android", "ios"},
		Status: "IN_PROGRESS", PlatformResults: map[string]*buildstatus.PlatformResult{}, CreatedAt: &created,
	}, buildstatus.SaveOptions{})
	if err != nil {
		log.Fatal(err)
	}
	build, err := store.Get(ctx, id)
	if err != nil {
		log.Fatal(err)
	}
	doc := build.MustDoc()
	fmt.Println("saved:", doc.ProjectID, doc.Status, doc.Platforms)

	// One platform reports: the members given replace, those left out are kept, and a
	// concurrent update of another platform is never lost.
	var patch map[string]json.RawMessage
	_ = json.Unmarshal([]byte(`{"status": "SUCCESS", "progress": 100}`), &patch)
	build, err = buildstatus.PatchPlatform(ctx, store, id, "android", patch, "")
	if err != nil {
		log.Fatal(err)
	}
	android := build.MustDoc().PlatformResults["android"]
	fmt.Println("android:", android.Status, *android.Progress)

	if err := store.Delete(ctx, id, ""); err != nil {
		log.Fatal(err)
	}
	for range 3 {
		ev := <-events
		fmt.Println("event:", ev.Type)
	}
	// Output:
	// saved: example-project IN_PROGRESS [android ios]
	// android: SUCCESS 100
	// event: saved
	// event: saved
	// event: deleted
}
