package pgsource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/internal/rediserr"
	"github.com/redstate/redstate/sqldb"
)

// errBackfillFenceLost is the class of the error of a backfill progress write refused because
// another runner claimed the backfill since this one did (a restarted process, a second
// instance): this runner stops; the source retries after ErrorDelay, claiming again and
// resuming from the recorded progress.
var errBackfillFenceLost = errors.New("backfill fence lost")

// backfill copies table's existing rows by keyset pagination on the index table's key,
// resuming after the last key recorded in Redis. It claims the backfill first: from then on
// the progress writes of every runner that claimed it earlier are refused.
func (s *Source) backfill(ctx context.Context, table string, snapshot uint64) error {
	schema, name := splitTable(table)
	spec, ok := s.ix.Table(s.opts.Database, name)
	if !ok {
		return redstate.Errorf(redstate.EINVALID, "pg source: table %s.%s is not declared in index.tables", s.opts.Database, name)
	}
	progress, err := s.claimBackfill(ctx)
	if err != nil {
		return err
	}
	ident := quoteIdent(schema) + "." + quoteIdent(name)
	key := quoteIdent(spec.Key)
	var keyType string
	if err := s.opts.DB.QueryRowContext(ctx, "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = $1::regclass AND attname = $2 AND NOT attisdropped",
		ident, spec.Key).Scan(&keyType); err != nil {
		return sqldb.Map(err, "read the key column type of "+table)
	}
	version := index.PostgresVersion(snapshot, 0)
	read := func(ctx context.Context, after string, first bool, limit int) ([]index.Change, string, error) {
		// t.<key> everywhere: a bare name in ORDER BY would mean the text output column.
		q := "SELECT t." + key + "::text AS backfill_key, row_to_json(t)::text FROM " + ident + " t WHERE t." + key + " > ($2::text)::" + keyType + " ORDER BY t." + key + " LIMIT $1"
		args := []any{limit, after}
		if first {
			q, args = "SELECT t."+key+"::text AS backfill_key, row_to_json(t)::text FROM "+ident+" t ORDER BY t."+key+" LIMIT $1", args[:1]
		}
		readAt := time.Now().UTC() // the rows' time: their state as of this read (no change time exists)
		rows, err := s.opts.DB.QueryContext(ctx, q, args...)
		if err != nil {
			return nil, "", sqldb.Map(err, "backfill "+table)
		}
		defer rows.Close()
		var changes []index.Change
		last := after
		for rows.Next() {
			var k, js string
			if err := rows.Scan(&k, &js); err != nil {
				return nil, "", sqldb.Map(err, "backfill "+table)
			}
			var cols map[string]json.RawMessage
			if err := json.Unmarshal([]byte(js), &cols); err != nil {
				return nil, "", fmt.Errorf("backfill %s: %w", table, err)
			}
			changes = append(changes, index.Change{DB: s.opts.Database, Table: name, Op: index.OpUpsert, Row: index.TextRow(cols), Version: version, Time: readAt,
				Encoding: index.EncodingPostgres})
			last = k
		}
		return changes, last, sqldb.Map(rows.Err(), "backfill "+table)
	}
	return index.PagedSnapshot{Indexer: s.ix, Progress: progress, PageSize: s.opts.BackfillPage, Name: "backfill",
		Copied: func(n int) { s.BackfilledRows.Add(int64(n)) }, Logger: s.log}.Copy(ctx, table, read)
}

// backfillFenceField is the field of the backfill hash holding the fence of the runner that
// claimed the backfill last. A table's field is its name, which never starts with a NUL byte.
const backfillFenceField = "\x00fence"

// backfillProgress is the backfill's progress in Keys.Backfill (followed table → last key
// copied), its writes fenced by the fence this runner claimed: refused once another runner
// claimed a newer one.
type backfillProgress struct {
	client redis.UniversalClient
	key    string
	fence  string
}

// claimBackfill claims the backfill: it issues a fence above every earlier runner's, so their
// progress writes are refused from now on.
func (s *Source) claimBackfill(ctx context.Context) (backfillProgress, error) {
	fence, err := claimBackfillScript.Run(ctx, s.opts.Redis, []string{s.keys.Backfill}, backfillFenceField).Int64()
	if err != nil {
		return backfillProgress{}, rediserr.Map(err, "claim the backfill")
	}
	return backfillProgress{client: s.opts.Redis, key: s.keys.Backfill, fence: strconv.FormatInt(fence, 10)}, nil
}

// Last implements index.SnapshotProgress.
func (p backfillProgress) Last(ctx context.Context, table string) (string, bool, error) {
	last, err := p.client.HGet(ctx, p.key, table).Result()
	if errors.Is(err, redis.Nil) {
		return "", false, nil
	}
	return last, err == nil, rediserr.Map(err, "read backfill progress")
}

// Record implements index.SnapshotProgress: refused (errBackfillFenceLost) when another runner
// claimed the backfill since this one.
func (p backfillProgress) Record(ctx context.Context, table, value string) error {
	n, err := fencedBackfillScript.Run(ctx, p.client, []string{p.key}, backfillFenceField, p.fence, table, value).Int()
	if err != nil {
		return rediserr.Map(err, "record backfill progress")
	}
	if n == 0 {
		return fmt.Errorf("%w: recording the progress of %s was refused: another runner claimed the backfill since this one (fence %s)", errBackfillFenceLost, table, p.fence)
	}
	return nil
}

// claimBackfillScript issues the next backfill fence and records it in the backfill hash.
//
//	KEYS[1]  Keys.Backfill
//	ARGV[1]  backfillFenceField
//
// Returns the new fence: the larger of the recorded one plus one and the server clock in
// microseconds (TIME), so a claim is above every earlier one even when the hash was deleted
// meanwhile (a new slot resets the backfill; a flush) and the clock did not go back.
var claimBackfillScript = redis.NewScript(`
local t = redis.call('TIME')
local f = tonumber(t[1]) * 1000000 + tonumber(t[2])
local c = tonumber(redis.call('HGET', KEYS[1], ARGV[1]))
if c and c >= f then f = c + 1 end
redis.call('HSET', KEYS[1], ARGV[1], string.format('%.0f', f))
return f
`)

// fencedBackfillScript records one table's backfill progress only while the hash holds the
// writer's fence.
//
//	KEYS[1]  Keys.Backfill
//	ARGV[1]  backfillFenceField
//	ARGV[2]  the writer's fence
//	ARGV[3]  the table
//	ARGV[4]  the last key copied, or index.SnapshotDone
//
// Returns 1 if written, 0 if refused.
var fencedBackfillScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[3], ARGV[4])
return 1
`)
