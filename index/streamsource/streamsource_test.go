package streamsource_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/indextest"
	"github.com/redstate/redstate/index/redisindex"
	"github.com/redstate/redstate/index/streamsource"
	"github.com/redstate/redstate/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// envelope is a Debezium MySQL insert of the seed table.
func envelope(id, las, pos int) string {
	return fmt.Sprintf(`{"before":null,"after":{"id":%d,"provinceId":1,"cityId":72,"lastAddrId":%d,"categoryId":870,"brandId":1,"yn":1},
	  "source":{"db":"db1","table":"table1","file":"mysql-bin.000001","pos":%d,"row":0},"op":"c"}`, id, las, pos)
}

// TestSource_AppliesAcksAndClaimsFromDeadConsumer: entries written as Debezium Server's Redis
// sink writes them are applied and acknowledged; entries a dead consumer read and never
// acknowledged are claimed and applied; an unreadable entry is dead-lettered and acknowledged.
func TestSource_AppliesAcksAndClaimsFromDeadConsumer(t *testing.T) {
	client := redistest.SharedStandalone(t).Client(t)
	ctx := context.Background()
	prefix := indextest.UniquePrefix()
	ix, err := index.New(redisindex.New(client), []index.TableSpec{indextest.SeedTable(false)}, index.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	stream := prefix + ".db1.table1"
	for i := 1; i <= 4; i++ {
		if err := client.XAdd(ctx, &redis.XAddArgs{Stream: stream, Values: []string{fmt.Sprintf(`{"id":%d}`, i), envelope(i, 70+i, 100+i)}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := client.XAdd(ctx, &redis.XAddArgs{Stream: stream, Values: []string{"key", "k", "value", "{not json"}}).Err(); err != nil {
		t.Fatal(err)
	}
	// A consumer that dies holding two entries.
	if err := client.XGroupCreateMkStream(ctx, stream, "redstate-index", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if n := len(client.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "redstate-index", Consumer: "dead", Streams: []string{stream, ">"}, Count: 2}).Val()[0].Messages); n != 2 {
		t.Fatalf("dead consumer read %d", n)
	}
	src, err := streamsource.New(ix, streamsource.Options{Client: client, Streams: []string{stream}, Consumer: "live",
		ClaimIdle: 300 * time.Millisecond, Block: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = src.Run(runCtx); close(done) }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		pending := client.XPending(ctx, stream, "redstate-index").Val()
		rows, err := ix.Query(ctx, "db1", "table1", map[string]string{"las": "71", "cat": "870"})
		if err != nil {
			t.Fatal(err)
		}
		if pending != nil && pending.Count == 0 && len(rows) == 1 && ix.Stats("db1", "table1").Applied.Load() == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pending %+v, applied %d", pending, ix.Stats("db1", "table1").Applied.Load())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	<-done
	if n := client.LLen(ctx, ix.DeadLetterKey()).Val(); n != 1 {
		t.Errorf("dead letters = %d, want 1", n)
	}
}

// TestEntryPosition: stream entry ids map to delivery positions in the stream's order, so the
// flat messages of one Canal batch written to a stream in order keep their order.
func TestEntryPosition(t *testing.T) {
	ids := []string{"1700000000000-0", "1700000000000-1", "1700000000000-4194302", "1700000000001-0", "1800000000000-7"}
	for i := 1; i < len(ids); i++ {
		if !(streamsource.EntryPosition(ids[i-1]) < streamsource.EntryPosition(ids[i])) {
			t.Errorf("position of %s (%d) is not before %s (%d)", ids[i-1], streamsource.EntryPosition(ids[i-1]), ids[i], streamsource.EntryPosition(ids[i]))
		}
	}
	if streamsource.EntryPosition("garbage") != 0 || streamsource.EntryPosition("5-x") != 0 {
		t.Error("an unparsable id must be position 0")
	}
}

// TestSource_RecreatesALostGroup: the consumer group vanishes under a running source (a
// failover that lost its creation, a master restarted without persistence, the stream deleted
// and written again): the source creates it again and applies what is written next, instead of
// failing with NOGROUP until it is restarted.
func TestSource_RecreatesALostGroup(t *testing.T) {
	client := redistest.SharedStandalone(t).Client(t)
	ctx := context.Background()
	prefix := indextest.UniquePrefix()
	ix, err := index.New(redisindex.New(client), []index.TableSpec{indextest.SeedTable(false)}, index.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	stream := prefix + ".db1.table1"
	src, err := streamsource.New(ix, streamsource.Options{Client: client, Streams: []string{stream}, Consumer: "live",
		Block: 100 * time.Millisecond, ErrorDelay: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = src.Run(runCtx); close(done) }()
	defer func() { cancel(); <-done }()
	waitApplied := func(n int64) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for ix.Stats("db1", "table1").Applied.Load() < n {
			if time.Now().After(deadline) {
				t.Fatalf("applied %d of %d changes", ix.Stats("db1", "table1").Applied.Load(), n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	add := func(id, pos int) {
		t.Helper()
		if err := client.XAdd(ctx, &redis.XAddArgs{Stream: stream, Values: []string{"k", envelope(id, 70, pos)}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	add(1, 101)
	waitApplied(1)
	if err := client.Del(ctx, stream).Err(); err != nil { // the stream and its group are gone
		t.Fatal(err)
	}
	add(2, 102)
	waitApplied(2)
}

// debeziumKey is the record key Debezium writes for customers 1004 (its documentation's key
// example, with the JSON converter's schema).
const debeziumKey = `{"schema":{"type":"struct","name":"mysql-server-1.inventory.customers.Key","optional":false,"fields":[{"field":"id","type":"int32","optional":false}]},"payload":{"id":1004}}`

// readFixture reads an event of index/testdata (see its SOURCE.md).
func readFixture(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", path))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestSource_DebeziumServerEntries: entries as Debezium Server's Redis sink writes them
// (RedisStreamChangeConsumer): compact ({record key: value}) and extended (key, value and the
// headers upper-cased), Debezium's documented create, truncate (no record key: the sink's
// null.key, "default"), update, delete of a customer, and the tombstone after the delete, whose
// null value the sink writes as its null.value, "default". The truncate removes the customer
// and the update older than it is stale; the tombstones are acknowledged and counted, never
// dead-lettered.
func TestSource_DebeziumServerEntries(t *testing.T) {
	client := redistest.SharedStandalone(t).Client(t)
	ctx := context.Background()
	prefix := indextest.UniquePrefix()
	spec := index.TableSpec{DB: "inventory", Table: "customers", Key: "id",
		Columns:    []index.Column{{Name: "id", Type: index.TypeLong}, {Name: "first_name", Type: index.TypeString}, {Name: "last_name", Type: index.TypeString}},
		Dimensions: [][]index.Part{{{Code: "ln", Column: "last_name"}}}}
	ix, err := index.New(redisindex.New(client), []index.TableSpec{spec}, index.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	stream := prefix + ".inventory.customers"
	add := func(values ...string) {
		t.Helper()
		if err := client.XAdd(ctx, &redis.XAddArgs{Stream: stream, Values: values}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	add(debeziumKey, readFixture(t, "debezium/mysql-create.json"))
	src, err := streamsource.New(ix, streamsource.Options{Client: client, Streams: []string{stream}, Consumer: "live", Block: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = src.Run(runCtx); close(done) }()
	defer func() { cancel(); <-done }()
	awaitRows := func(what string, cond func(map[string]json.RawMessage) bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			rows, err := ix.Query(ctx, "inventory", "customers", map[string]string{"ln": "Kretchmar"})
			if err != nil {
				t.Fatal(err)
			}
			if cond(rows) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: rows %s", what, rows)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	awaitRows("create", func(rows map[string]json.RawMessage) bool {
		return strings.Contains(string(rows["1004"]), `"first_name":"Anne"`)
	})
	add("default", readFixture(t, "debezium/mysql-truncate.json"))
	awaitRows("truncate", func(rows map[string]json.RawMessage) bool { return len(rows) == 0 })
	add("key", debeziumKey, "value", readFixture(t, "debezium/mysql-update.json"), "HEADERKEY", "headerValue")
	add(debeziumKey, readFixture(t, "debezium/mysql-delete.json"))
	add(debeziumKey, "default")
	add("key", debeziumKey, "value", "default", "HEADERKEY", "headerValue")
	awaitRows("delete", func(rows map[string]json.RawMessage) bool { return len(rows) == 0 })
	deadline := time.Now().Add(20 * time.Second)
	for src.Tombstones.Load() != 2 || client.XPending(ctx, stream, index.DefaultStreamGroup).Val().Count != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("tombstones %d, pending %+v", src.Tombstones.Load(), client.XPending(ctx, stream, index.DefaultStreamGroup).Val())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st := ix.Stats("inventory", "customers"); st.Applied.Load() != 3 || st.Stale.Load() != 1 {
		t.Errorf("applied %d (create, truncate, delete), stale %d (the update older than the truncate)", st.Applied.Load(), st.Stale.Load())
	}
	if n := client.LLen(ctx, ix.DeadLetterKey()).Val(); n != 0 || ix.Unreadable() != 0 {
		t.Errorf("dead letters %d (%v), unreadable %d", n, client.LRange(ctx, ix.DeadLetterKey(), 0, -1).Val(), ix.Unreadable())
	}
}
