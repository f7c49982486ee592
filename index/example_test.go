package index_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"maps"
	"slices"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/redisindex"
)

// redisAddr is your Redis; the tests start their own.
var redisAddr = "127.0.0.1:6379"

// The CDC tag index embedded in a Go program with its own go-redis client: a declared table,
// row changes as Canal delivers them applied with a per-row version compare-and-set, and
// rows queried by a combination of conditions (one HGETALL).
func Example() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer client.Close()

	orders := index.TableSpec{
		DB: "shop", Table: "orders", Key: "id",
		Columns: []index.Column{
			{Name: "id", Type: index.TypeLong}, {Name: "cityId", Type: index.TypeInt},
			{Name: "status", Type: index.TypeString}, {Name: "amount", Type: index.TypeDecimal},
		},
		// Queryable by city, and by city and status.
		Dimensions: [][]index.Part{
			{{Code: "city", Column: "cityId"}},
			{{Code: "city", Column: "cityId"}, {Code: "st", Column: "status"}},
		},
	}
	ix, err := index.New(redisindex.New(client), []index.TableSpec{orders}, index.Options{})
	if err != nil {
		log.Fatal(err)
	}

	events := []string{
		`{"data":[{"id":"1","cityId":"72","status":"paid","amount":"19.90"},{"id":"2","cityId":"72","status":"new","amount":"5.00"}],
		  "database":"shop","table":"orders","type":"INSERT","es":1700000000000,"id":41,"isDdl":false}`,
		`{"data":[{"id":"2","cityId":"72","status":"paid","amount":"5.00"}],"old":[{"status":"new"}],
		  "database":"shop","table":"orders","type":"UPDATE","es":1700000005000,"id":42,"isDdl":false}`,
	}
	for i, event := range events {
		// i is the event's place in its stream: the same whenever it is delivered again, so a
		// redelivery is recognised as stale.
		changes, _, err := index.ParseEvent(index.FormatCanal, json.RawMessage(event), uint64(i))
		if err != nil {
			log.Fatal(err)
		}
		if _, err := ix.Apply(ctx, changes); err != nil {
			log.Fatal(err)
		}
	}

	// Order 2 left the st-new hash when its update was applied (its version key's relation said where it was).
	for _, conds := range []map[string]string{{"city": "72"}, {"city": "72", "st": "new"}, {"city": "72", "st": "paid"}} {
		rows, err := ix.Query(ctx, "shop", "orders", conds)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(conds, len(rows), "rows")
		for _, id := range slices.Sorted(maps.Keys(rows)) {
			fmt.Printf("  %s: %s\n", id, rows[id])
		}
	}
	// Output:
	// map[city:72] 2 rows
	//   1: {"amount":"19.90","cityId":72,"id":1,"status":"paid"}
	//   2: {"amount":"5.00","cityId":72,"id":2,"status":"paid"}
	// map[city:72 st:new] 0 rows
	// map[city:72 st:paid] 2 rows
	//   1: {"amount":"19.90","cityId":72,"id":1,"status":"paid"}
	//   2: {"amount":"5.00","cityId":72,"id":2,"status":"paid"}
}
