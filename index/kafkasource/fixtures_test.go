package kafkasource_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/redisindex"
)

// fixture reads a file of index/testdata (see its SOURCE.md): one event, or one per line.
func fixture(t *testing.T, path string, lines bool) [][]byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", path))
	if err != nil {
		t.Fatal(err)
	}
	if !lines {
		return [][]byte{b}
	}
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		out = append(out, append([]byte(nil), sc.Bytes()...))
	}
	return out
}

// TestSource_UpstreamMessages: genuine messages read from Kafka, as Canal's MQ mode and Kafka
// Connect write them: Canal's flat messages of a MySQL FLOAT column (Flink's), Debezium's
// PostgreSQL payment row with its schema (a precise Decimal and a MicroTimestamp), and
// Debezium's documented MySQL create, truncate, update, delete and the tombstone after it. The
// rows end as their projects expect; the truncate removes the customer, the update older than
// it is stale; nothing is dead-lettered.
func TestSource_UpstreamMessages(t *testing.T) {
	e := newEnv(t, 1, "canal", "dbz-customers", "dbz-payment")
	e.store = redisindex.New(e.redis)
	customers := index.TableSpec{DB: "inventory", Table: "customers", Key: "id",
		Columns:    []index.Column{{Name: "id", Type: index.TypeLong}, {Name: "first_name", Type: index.TypeString}, {Name: "last_name", Type: index.TypeString}},
		Dimensions: [][]index.Part{{{Code: "ln", Column: "last_name"}}}}
	products := index.TableSpec{DB: "inventory", Table: "products2", Key: "id",
		Columns:    []index.Column{{Name: "id", Type: index.TypeLong}, {Name: "name", Type: index.TypeString}, {Name: "weight", Type: index.TypeFloat}},
		Dimensions: [][]index.Part{{{Code: "n", Column: "name"}}}}
	payment := index.TableSpec{DB: "dvdrental", Table: "payment", Key: "payment_id",
		Columns: []index.Column{{Name: "payment_id", Type: index.TypeLong}, {Name: "customer_id", Type: index.TypeInt},
			{Name: "amount", Type: index.TypeDecimal}, {Name: "payment_date", Type: "datetime(6)"}},
		Dimensions: [][]index.Part{{{Code: "cus", Column: "customer_id"}}}}
	ix, err := index.New(e.store, []index.TableSpec{customers, products, payment}, index.Options{Prefix: e.prefix})
	if err != nil {
		t.Fatal(err)
	}
	e.ix = ix
	e.produce("canal", 0, fixture(t, "canal/flink-canal-data.txt", true)...)
	var dbz [][]byte
	for _, f := range []string{"mysql-create", "mysql-truncate", "mysql-update", "mysql-delete"} {
		dbz = append(dbz, fixture(t, "debezium/"+f+".json", false)...)
	}
	e.produce("dbz-customers", 0, append(dbz, nil)...)
	e.produce("dbz-payment", 0, fixture(t, "debezium/floodplain-decimalwithscale.json", false)...)
	src := e.source("g", index.FormatAuto, []string{"canal", "dbz-customers", "dbz-payment"})
	run(t, src)
	e.waitCommitted("g")
	ctx := context.Background()
	rows := func(db, table string, conds map[string]string) map[string]map[string]any {
		raw, err := ix.Query(ctx, db, table, conds)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]map[string]any{}
		for id, r := range raw {
			var m map[string]any
			dec := json.NewDecoder(bytes.NewReader(r))
			dec.UseNumber()
			if err := dec.Decode(&m); err != nil {
				t.Fatal(err)
			}
			out[id] = m
		}
		return out
	}
	if got := rows("inventory", "products2", map[string]string{"n": "jacket"}); got["108"]["weight"] != json.Number("0.1") || got["110"]["weight"] != json.Number("0.5") {
		t.Errorf("jackets %v", got)
	}
	if got := rows("inventory", "products2", map[string]string{"n": "scooter"}); len(got) != 1 || got["101"]["weight"] != json.Number("5.17") {
		t.Errorf("scooters %v", got)
	}
	if got := rows("dvdrental", "payment", map[string]string{"cus": "264"}); got["32098"]["amount"] != "2.99" || got["32098"]["payment_date"] != "2007-05-14T13:44:29.996577" {
		t.Errorf("payment %v", got)
	}
	if got := rows("inventory", "customers", map[string]string{"ln": "Kretchmar"}); len(got) != 0 {
		t.Errorf("customers %v", got)
	}
	if st := ix.Stats("inventory", "customers"); st.Applied.Load() != 3 || st.Stale.Load() != 1 {
		t.Errorf("customers applied %d (create, truncate, delete), stale %d (the update older than the truncate)", st.Applied.Load(), st.Stale.Load())
	}
	if n, f := src.DeadLetters.Load(), ix.Stats("inventory", "products2").Failed.Load(); n != 0 || f != 0 {
		t.Errorf("dead letters %d, failed %d", n, f)
	}
}
