//go:build chaos

package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/sqldb"
)

// idxRows is how many rows of the index's SQL table keep changing: few, so that every row
// changes many times per phase and a change lost in Redis is usually followed by others of the
// same row, which repair it. One change in idxFreshEvery instead inserts a new row that never
// changes again (ids above idxRows): a lost change of such a row stays lost until a repair.
const (
	idxRows       = 200
	idxFreshEvery = 5
)

// idxDB is the index's source database name (a key segment).
const idxDB = "chaos"

// idxSQL is the index's source of truth: an SQLite table whose changes are numbered in commit
// order, the way a binary log numbers them, and turned into Debezium change events.
type idxSQL struct {
	db    *sqldb.DB
	table string

	mu sync.Mutex
	// pos is the position of the last committed change: the binlog position of its event.
	pos uint64
	// present holds the ids of the changing rows in the table (logically deleted ones
	// included).
	present map[int]bool
	// fresh is how many rows were inserted never to change again.
	fresh int
	rng   *rand.Rand
}

// newIdxSQL creates table in an SQLite file in t.TempDir(), closed in t.Cleanup.
func newIdxSQL(t *testing.T, table string) *idxSQL {
	t.Helper()
	db, err := sqldb.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "index.db"))
	if err != nil {
		t.Fatalf("open SQLite: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if _, err := db.Exec(`CREATE TABLE items (id INTEGER PRIMARY KEY, cat INTEGER NOT NULL, shop INTEGER NOT NULL, name TEXT, yn INTEGER NOT NULL)`); err != nil {
		t.Fatalf("create table: %v", err)
	}
	return &idxSQL{db: db, table: table, present: map[int]bool{}, rng: rand.New(rand.NewPCG(1, 2))}
}

// idxSpec declares the table to the index: two condition combinations and the logical-delete
// column yn. Every key shares the table's hash tag (required on Cluster).
func idxSpec(table string) index.TableSpec {
	return index.TableSpec{
		DB: idxDB, Table: table, Key: "id", DeleteColumn: "yn", HashTag: true,
		Columns: []index.Column{
			{Name: "id", Type: index.TypeLong}, {Name: "cat", Type: index.TypeInt},
			{Name: "shop", Type: index.TypeInt}, {Name: "name", Type: "string?"},
		},
		Dimensions: [][]index.Part{
			{{Code: "cat", Column: "cat"}},
			{{Code: "cat", Column: "cat"}, {Code: "shop", Column: "shop"}},
		},
	}
}

// idxChange is one committed change of the table.
type idxChange struct {
	id int
	// event is its Debezium change event (MySQL source: file, pos, row).
	event string
}

// change commits one random change — the insert of a new row that never changes again, or a
// change of a random changing row: an insert of an absent row; else an update (70 %, moving
// the row between index keys), a logical delete (yn = 0, 20 %) or a delete (10 %) — and
// returns its event. Changes are serialized, so positions follow commit order.
func (s *idxSQL) change() (idxChange, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.rng.IntN(idxRows) + 1
	if s.rng.IntN(idxFreshEvery) == 0 {
		s.fresh++
		id = idxRows + s.fresh
	}
	row := map[string]any{"id": id, "cat": s.rng.IntN(5), "shop": s.rng.IntN(3), "name": "n" + strconv.Itoa(s.rng.IntN(1000)), "yn": 1}
	op, stmt := "u", `UPDATE items SET cat = ?, shop = ?, name = ?, yn = ? WHERE id = ?`
	switch r := s.rng.IntN(10); {
	case !s.present[id]:
		op, stmt = "c", `INSERT INTO items (cat, shop, name, yn, id) VALUES (?, ?, ?, ?, ?)`
	case r >= 9:
		op, stmt = "d", `DELETE FROM items WHERE id = ?`
	case r >= 7:
		row["yn"] = 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var err error
	if op == "d" {
		_, err = s.db.ExecContext(ctx, stmt, id)
	} else {
		_, err = s.db.ExecContext(ctx, stmt, row["cat"], row["shop"], row["name"], row["yn"], id)
	}
	if err != nil {
		return idxChange{}, fmt.Errorf("SQL %s of row %d: %w", op, id, err)
	}
	s.present[id] = op != "d"
	s.pos++
	ev := map[string]any{"op": op, "after": row, "before": nil,
		"source": map[string]any{"db": idxDB, "table": s.table, "file": "mysql-bin.000001", "pos": s.pos, "row": 0}}
	if op == "d" {
		ev["after"], ev["before"] = nil, map[string]any{"id": id}
	}
	raw, _ := json.Marshal(ev)
	return idxChange{id: id, event: string(raw)}, nil
}

// rows is the table as an index.RowSource: what `redstate index verify` reads from the source
// database.
func (s *idxSQL) rows(ctx context.Context) index.RowSource {
	return func(f func(map[string]*string) bool) error {
		rows, err := s.db.QueryContext(ctx, `SELECT id, cat, shop, name, yn FROM items`)
		if err != nil {
			return err
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			var id, cat, shop, yn string
			var name *string
			if err := rows.Scan(&id, &cat, &shop, &name, &yn); err != nil {
				return err
			}
			if !f(map[string]*string{"id": &id, "cat": &cat, "shop": &shop, "name": name, "yn": &yn}) {
				return nil
			}
		}
		return rows.Err()
	}
}
