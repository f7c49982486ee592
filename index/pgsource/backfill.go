package pgsource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/internal/rediserr"
	"github.com/redstate/redstate/sqldb"
)

// backfill copies table's existing rows by keyset pagination on the index table's key,
// resuming after the last key recorded in Redis.
func (s *Source) backfill(ctx context.Context, table string, snapshot uint64) error {
	schema, name := splitTable(table)
	spec, ok := s.ix.Table(s.opts.Database, name)
	if !ok {
		return redstate.Errorf(redstate.EINVALID, "pg source: table %s.%s is not declared in index.tables", s.opts.Database, name)
	}
	field := table
	last, err := s.opts.Redis.HGet(ctx, s.keys.Backfill, field).Result()
	if err == nil && last == "\x00done" {
		s.log.Info("backfill already done", "table", table)
		return nil
	}
	if err != nil && !errors.Is(err, redis.Nil) {
		return rediserr.Map(err, "read backfill progress")
	}
	started := err == nil
	ident := quoteIdent(schema) + "." + quoteIdent(name)
	key := quoteIdent(spec.Key)
	var keyType string
	if err := s.opts.DB.QueryRowContext(ctx, "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = $1::regclass AND attname = $2 AND NOT attisdropped",
		ident, spec.Key).Scan(&keyType); err != nil {
		return sqldb.Map(err, "read the key column type of "+table)
	}
	version := index.PostgresVersion(snapshot, 0)
	copied := 0
	s.log.Info("backfill started", "table", table, "resume_after", last)
	for ctx.Err() == nil {
		// t.<key> everywhere: a bare name in ORDER BY would mean the text output column.
		q := "SELECT t." + key + "::text AS backfill_key, row_to_json(t)::text FROM " + ident + " t ORDER BY t." + key + " LIMIT $1"
		args := []any{s.opts.BackfillPage}
		if started {
			q = "SELECT t." + key + "::text AS backfill_key, row_to_json(t)::text FROM " + ident + " t WHERE t." + key + " > ($2::text)::" + keyType + " ORDER BY t." + key + " LIMIT $1"
			args = append(args, last)
		}
		read := time.Now().UTC() // the rows' time: their state as of this read (no change time exists)
		rows, err := s.opts.DB.QueryContext(ctx, q, args...)
		if err != nil {
			return sqldb.Map(err, "backfill "+table)
		}
		var changes []index.Change
		for rows.Next() {
			var k, js string
			if err := rows.Scan(&k, &js); err != nil {
				rows.Close()
				return sqldb.Map(err, "backfill "+table)
			}
			var cols map[string]json.RawMessage
			if err := json.Unmarshal([]byte(js), &cols); err != nil {
				rows.Close()
				return fmt.Errorf("backfill %s: %w", table, err)
			}
			changes = append(changes, index.Change{DB: s.opts.Database, Table: name, Op: index.OpUpsert, Row: index.TextRow(cols), Version: version, Time: read,
				Encoding: index.EncodingPostgres})
			last, started = k, true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return sqldb.Map(err, "backfill "+table)
		}
		if len(changes) == 0 {
			break
		}
		if _, err := s.ix.Apply(ctx, changes); err != nil {
			return err
		}
		copied += len(changes)
		s.BackfilledRows.Add(int64(len(changes)))
		if err := s.opts.Redis.HSet(ctx, s.keys.Backfill, field, last).Err(); err != nil {
			return rediserr.Map(err, "record backfill progress")
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	s.log.Info("backfill done", "table", table, "rows", copied)
	return rediserr.Map(s.opts.Redis.HSet(ctx, s.keys.Backfill, field, "\x00done").Err(), "record backfill done")
}
