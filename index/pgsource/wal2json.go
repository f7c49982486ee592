package pgsource

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/internal/rediserr"
	"github.com/redstate/redstate/sqldb"
)

// wal2jsonAction is one row of wal2json format version 2.
type wal2jsonAction struct {
	Action   string      `json:"action"`
	Schema   string      `json:"schema"`
	Table    string      `json:"table"`
	Columns  []walColumn `json:"columns"`
	Identity []walColumn `json:"identity"`
	// Timestamp is the commit time of B/C rows (include-timestamp).
	Timestamp string `json:"timestamp"`
}

type walColumn struct {
	Name  string          `json:"name"`
	Value json.RawMessage `json:"value"`
}

// StreamOnce peeks up to BatchChanges rows of whole transactions, applies the committed ones
// newer than the recorded position, records the position and advances the slot. It returns
// how many changes it applied.
func (s *Source) StreamOnce(ctx context.Context) (int, error) {
	var posText string
	var pos uint64
	posText, err := s.opts.Redis.Get(ctx, s.keys.Position).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, rediserr.Map(err, "read stream position")
	}
	if posText != "" {
		if pos, err = index.ParseLSN(posText); err != nil {
			return 0, err
		}
	}
	// wal2json writes a bytea as its text output less the first two characters, the "\x" of
	// bytea_output hex: under escape (a database's or role's setting) it would cut into the
	// bytes. The peek's transaction reads in hex whatever the setting.
	peek, err := s.opts.DB.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return 0, sqldb.Map(err, "peek slot")
	}
	defer func() { _ = peek.Rollback() }()
	if _, err := peek.ExecContext(ctx, "SET LOCAL bytea_output = 'hex'"); err != nil {
		return 0, sqldb.Map(err, "peek slot")
	}
	rows, err := peek.QueryContext(ctx, `SELECT lsn::text, data FROM pg_logical_slot_peek_changes($1, NULL, $2,
		'format-version', '2', 'include-timestamp', 'true', 'include-types', 'false', 'add-tables', $3)`,
		s.opts.Slot, s.opts.BatchChanges, s.addTables())
	if err != nil {
		return 0, sqldb.Map(err, "peek slot")
	}
	var (
		changes, tx []index.Change
		lastLSN     uint64
		lastCommit  time.Time
	)
	for rows.Next() {
		var lsnText, data string
		if err := rows.Scan(&lsnText, &data); err != nil {
			rows.Close()
			return 0, sqldb.Map(err, "peek slot")
		}
		lsn, err := index.ParseLSN(lsnText)
		if err != nil {
			rows.Close()
			return 0, err
		}
		lastLSN = lsn
		var a wal2jsonAction
		if err := json.Unmarshal([]byte(data), &a); err != nil {
			rows.Close()
			return 0, fmt.Errorf("wal2json row at %s: %w", lsnText, err)
		}
		switch a.Action {
		case "B":
			tx = tx[:0]
		case "I", "U", "D", "T":
			ch := index.Change{DB: s.opts.Database, Table: a.Table, Op: index.OpUpsert, Row: columnsRow(a.Columns), Version: index.Version(fmt.Sprintf("%016x", lsn)),
				Encoding: index.EncodingWal2JSON}
			switch a.Action {
			case "D":
				ch.Op, ch.Row = index.OpDelete, columnsRow(a.Identity)
			case "T":
				ch.Op, ch.Row = index.OpTruncate, nil
			}
			tx = append(tx, ch)
		case "C":
			if lsn > pos {
				at, _ := time.Parse("2006-01-02 15:04:05.999999-07", a.Timestamp)
				for _, ch := range tx {
					own, _ := parseHexLSN(string(ch.Version))
					ch.Version, ch.Time = index.PostgresVersion(lsn, own), at
					changes = append(changes, ch)
				}
				lastCommit = at
			}
			tx = tx[:0]
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, sqldb.Map(err, "peek slot")
	}
	_ = peek.Rollback() // read only: nothing to commit; the connection goes back to the pool
	if lastLSN == 0 {
		s.lagBytes.Store(0)
		return 0, nil
	}
	if len(changes) > 0 {
		if _, err := s.ix.Apply(index.WithSource(ctx, s.HistorySource()), changes); err != nil {
			return 0, err
		}
		s.Events.Add(int64(len(changes)))
	}
	if !lastCommit.IsZero() {
		s.lagMillis.Store(time.Since(lastCommit).Milliseconds())
	}
	if err := s.opts.Redis.Set(ctx, s.keys.Position, index.FormatLSN(lastLSN), 0).Err(); err != nil {
		return 0, rediserr.Map(err, "record stream position")
	}
	if _, err := s.opts.DB.ExecContext(ctx, "SELECT pg_replication_slot_advance($1, $2::pg_lsn)", s.opts.Slot, index.FormatLSN(lastLSN)); err != nil {
		return 0, sqldb.Map(err, "advance slot")
	}
	var lag sql.NullInt64
	if err := s.opts.DB.QueryRowContext(ctx, "SELECT (pg_current_wal_lsn() - confirmed_flush_lsn)::bigint FROM pg_replication_slots WHERE slot_name = $1", s.opts.Slot).Scan(&lag); err == nil {
		s.lagBytes.Store(lag.Int64)
	}
	return len(changes), nil
}

// addTables is wal2json's add-tables filter ("schema.table,…", public for bare names).
func (s *Source) addTables() string {
	out := make([]string, len(s.opts.Tables))
	for i, t := range s.opts.Tables {
		schema, name := splitTable(t)
		out[i] = schema + "." + name
	}
	return strings.Join(out, ",")
}

func columnsRow(cols []walColumn) map[string]*string {
	m := make(map[string]json.RawMessage, len(cols))
	for _, c := range cols {
		m[c.Name] = c.Value
	}
	return index.TextRow(m)
}

func parseHexLSN(s string) (uint64, error) {
	var v uint64
	_, err := fmt.Sscanf(s, "%x", &v)
	return v, err
}
