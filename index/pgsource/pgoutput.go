package pgsource

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pglogrepl"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/index"
)

// boolOID is PostgreSQL's bool type: pgoutput sends t/f, the index (and row_to_json, which the
// backfill and verify read) true/false.
const boolOID = 16

// decoder turns pgoutput (protocol version 1) messages into index changes. Transactions come
// whole and in commit order, each as Begin, its changes, Commit. Every change is versioned
// (commit LSN, its ordinal in the transaction from 1): a replayed transaction gets the same
// versions, so it is stale; the backfill's (slot LSN, 0) is older than every change committed
// after the slot's consistent point.
type decoder struct {
	db string
	// followed maps "schema.table" to the index table of that name.
	followed  map[string]index.TableSpec
	relations map[uint32]*relation
	// open is true between Begin and Commit; commit, position and at describe that transaction.
	open     bool
	commit   uint64
	position uint64
	at       time.Time
}

// relation is a table as pgoutput described it, with the index table it feeds (nil: not
// followed, its changes are skipped).
type relation struct {
	msg   *pglogrepl.RelationMessage
	ident string
	spec  *index.TableSpec
	// reads are the columns the index reads (key, delete column, kept and dimension columns).
	reads map[string]bool
}

// decoded is what one message yields.
type decoded struct {
	changes []index.Change
	// lost are changes that cannot be applied (a read column not sent), each as its raw
	// description and reason, for the dead letters.
	lost []lostChange
	// skipped counts changes of tables that are not followed.
	skipped int
	// committed is the end LSN of the transaction a Commit message closed (0: none).
	committed uint64
	// commitTime is that transaction's commit time.
	commitTime time.Time
}

// lostChange is a change that cannot be applied.
type lostChange struct {
	raw    []byte
	reason string
}

func newDecoder(db string, followed map[string]index.TableSpec) *decoder {
	return &decoder{db: db, followed: followed, relations: map[uint32]*relation{}}
}

// decode reads one pgoutput message. Errors: EINVALID (a message out of protocol).
func (d *decoder) decode(data []byte) (decoded, error) {
	var out decoded
	msg, err := pglogrepl.Parse(data)
	if err != nil {
		return out, redstate.Errorf(redstate.EINVALID, "pgoutput message: %v", err)
	}
	switch m := msg.(type) {
	case *pglogrepl.RelationMessage:
		r := &relation{msg: m, ident: m.Namespace + "." + m.RelationName}
		if spec, ok := d.followed[r.ident]; ok {
			r.spec, r.reads = &spec, map[string]bool{}
			for _, c := range readColumns(spec) {
				r.reads[c] = true
			}
		}
		d.relations[m.RelationID] = r
	case *pglogrepl.BeginMessage:
		d.open, d.commit, d.position, d.at = true, uint64(m.FinalLSN), 0, m.CommitTime
	case *pglogrepl.CommitMessage:
		d.open = false
		out.committed, out.commitTime = uint64(m.TransactionEndLSN), m.CommitTime
	case *pglogrepl.InsertMessage:
		err = d.change(&out, m.RelationID, "insert", nil, m.Tuple)
	case *pglogrepl.UpdateMessage:
		err = d.change(&out, m.RelationID, "update", m.OldTuple, m.NewTuple)
	case *pglogrepl.DeleteMessage:
		err = d.change(&out, m.RelationID, "delete", m.OldTuple, nil)
	case *pglogrepl.TruncateMessage:
		err = d.truncate(&out, m.RelationIDs)
	}
	return out, err
}

// truncate turns a TRUNCATE of relations into one index truncate per followed table, at its
// place in the transaction: the table's rows older than it leave the index.
func (d *decoder) truncate(out *decoded, relIDs []uint32) error {
	for _, id := range relIDs {
		r := d.relations[id]
		if r == nil {
			return redstate.Errorf(redstate.EINVALID, "pgoutput: truncate of relation %d before its Relation message", id)
		}
		if !d.open {
			return redstate.Errorf(redstate.EINVALID, "pgoutput: truncate of %s outside a transaction", r.ident)
		}
		if r.spec == nil {
			out.skipped++
			continue
		}
		d.position++
		out.changes = append(out.changes, index.Change{DB: d.db, Table: r.spec.Table, Op: index.OpTruncate,
			Version: index.PostgresVersion(d.commit, d.position), Time: d.at})
	}
	return nil
}

// change turns one row change into index changes: an upsert, a delete, or for an update that
// changed the key a delete of the old key then an upsert of the new one.
func (d *decoder) change(out *decoded, relID uint32, op string, oldTuple, newTuple *pglogrepl.TupleData) error {
	r := d.relations[relID]
	if r == nil {
		return redstate.Errorf(redstate.EINVALID, "pgoutput: %s of relation %d before its Relation message", op, relID)
	}
	if !d.open {
		return redstate.Errorf(redstate.EINVALID, "pgoutput: %s of %s outside a transaction", op, r.ident)
	}
	if r.spec == nil {
		out.skipped++
		return nil
	}
	old, _, err := r.row(oldTuple, nil)
	if err != nil {
		return err
	}
	emit := func(op index.Op, row map[string]*string) {
		d.position++
		out.changes = append(out.changes, index.Change{DB: d.db, Table: r.spec.Table, Op: op, Row: row,
			Version: index.PostgresVersion(d.commit, d.position), Time: d.at, Encoding: index.EncodingPostgres})
	}
	if newTuple == nil { // delete
		if old[r.spec.Key] == nil {
			out.lost = append(out.lost, d.lost(r, op, old, "the delete carries no "+r.spec.Key+": run ALTER TABLE "+r.ident+" REPLICA IDENTITY FULL"))
			return nil
		}
		emit(index.OpDelete, map[string]*string{r.spec.Key: old[r.spec.Key]})
		return nil
	}
	row, unsent, err := r.row(newTuple, old)
	if err != nil {
		return err
	}
	if len(unsent) > 0 {
		out.lost = append(out.lost, d.lost(r, op, row, fmt.Sprintf("unchanged TOASTed value of %s not sent: run ALTER TABLE %s REPLICA IDENTITY FULL, then redstate index verify --repair",
			strings.Join(unsent, ", "), r.ident)))
		return nil
	}
	if was := old[r.spec.Key]; was != nil && (row[r.spec.Key] == nil || *row[r.spec.Key] != *was) {
		emit(index.OpDelete, map[string]*string{r.spec.Key: was}) // the key changed: the old row is gone
	}
	emit(index.OpUpsert, row)
	return nil
}

// lost describes a change that cannot be applied.
func (d *decoder) lost(r *relation, op string, row map[string]*string, reason string) lostChange {
	raw, _ := json.Marshal(struct {
		Table     string             `json:"table"`
		Op        string             `json:"op"`
		CommitLSN string             `json:"commitLsn"`
		Row       map[string]*string `json:"row"`
	}{r.ident, op, index.FormatLSN(d.commit), row})
	return lostChange{raw: raw, reason: reason}
}

// row reads a tuple as text values by column name (nil tuple: nil row). An unchanged TOASTed
// value is taken from old when it has it (REPLICA IDENTITY FULL: a key-only old tuple has
// NULL for every other column); otherwise it is left out, and named in unsent when the index
// reads that column. Errors: EINVALID (a binary value: never requested).
func (r *relation) row(t *pglogrepl.TupleData, old map[string]*string) (row map[string]*string, unsent []string, err error) {
	if t == nil {
		return nil, nil, nil
	}
	row = make(map[string]*string, len(t.Columns))
	for i, c := range t.Columns {
		if i >= len(r.msg.Columns) {
			return nil, nil, redstate.Errorf(redstate.EINVALID, "pgoutput: %s has %d columns, a tuple %d", r.ident, len(r.msg.Columns), len(t.Columns))
		}
		col := r.msg.Columns[i]
		switch c.DataType {
		case pglogrepl.TupleDataTypeNull:
			row[col.Name] = nil
		case pglogrepl.TupleDataTypeText:
			v := string(c.Data)
			if col.DataType == boolOID {
				v = map[string]string{"t": "true", "f": "false"}[v]
			}
			row[col.Name] = &v
		case pglogrepl.TupleDataTypeToast:
			if v := old[col.Name]; v != nil {
				row[col.Name] = v
			} else if r.reads[col.Name] {
				unsent = append(unsent, col.Name)
			}
		default:
			return nil, nil, redstate.Errorf(redstate.EINVALID, "pgoutput: column %s of %s in format %q", col.Name, r.ident, c.DataType)
		}
	}
	return row, unsent, nil
}

// readColumns are the columns of spec the index reads: key, delete column, kept columns and
// dimension columns.
func readColumns(spec index.TableSpec) []string {
	seen := map[string]bool{}
	var out []string
	add := func(c string) {
		if c != "" && !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	add(spec.Key)
	add(spec.DeleteColumn)
	for _, c := range spec.Columns {
		add(c.Name)
	}
	for _, d := range spec.Dimensions {
		for _, p := range d {
			add(p.Column)
		}
	}
	return out
}
