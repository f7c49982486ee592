package indexbench

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/mysqlsource"
)

// transfer is the baseline: what go-mysql-transfer does for a Redis hash target, reduced to
// its work. A go-mysql BinlogSyncer reads the log; each row of the table becomes a JSON
// object of its columns, written with HSET into the row's index keys (the same layout as
// ours, so the two do the same writes) and removed with HDEL from the keys a before image
// had and the after image has not (an update that moves the row, a delete), pipelined per
// batch of rows; the position of the last complete transaction is kept in Redis after each
// batch. No version check, no relation key, no tombstone: a replayed or reordered event
// overwrites newer data, and a row image must be FULL.
type transfer struct {
	client  redis.UniversalClient
	keys    index.Keys
	spec    index.TableSpec
	posKey  string
	batch   int
	columns []string
	// done is the position of the last applied batch; rows counts the row changes applied.
	done atomic.Pointer[mysqlsource.Position]
	rows atomic.Int64
}

func (t *transfer) applied() mysqlsource.Position {
	if p := t.done.Load(); p != nil {
		return *p
	}
	return mysqlsource.Position{}
}

func (t *transfer) changes() int64 { return t.rows.Load() }

// transferBatch is what the transfer holds between pipelines.
type transferBatch struct {
	pipe                redis.Pipeliner
	rows                int
	file                string
	committed, recorded mysqlsource.Position
}

// run streams from `from` until ctx ends (nil then) or the stream fails.
func (t *transfer) run(ctx context.Context, cfg replication.BinlogSyncerConfig, from mysqlsource.Position) error {
	if err := t.stream(ctx, cfg, from); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

// stream is run's loop.
func (t *transfer) stream(ctx context.Context, cfg replication.BinlogSyncerConfig, from mysqlsource.Position) error {
	syncer := replication.NewBinlogSyncer(cfg)
	defer syncer.Close()
	st, err := syncer.StartSync(mysql.Position{Name: from.File, Pos: from.Pos})
	if err != nil {
		return err
	}
	b := transferBatch{pipe: t.client.Pipeline(), file: from.File, committed: from, recorded: from}
	for {
		wait, cancel := ctx, context.CancelFunc(func() {})
		if b.rows > 0 || b.committed != b.recorded {
			wait, cancel = context.WithTimeout(ctx, 20*time.Millisecond)
		}
		ev, err := st.GetEvent(wait)
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, context.DeadlineExceeded):
			if err := t.flush(ctx, &b); err != nil {
				return err
			}
			continue
		case err != nil:
			return err
		}
		switch e := ev.Event.(type) {
		case *replication.RotateEvent:
			b.file = string(e.NextLogName)
		case *replication.XIDEvent:
			b.committed = mysqlsource.Position{File: b.file, Pos: ev.Header.LogPos}
		case *replication.QueryEvent:
			if string(e.Query) != "BEGIN" {
				b.committed = mysqlsource.Position{File: b.file, Pos: ev.Header.LogPos}
			}
		case *replication.RowsEvent:
			if string(e.Table.Schema) == t.spec.DB && string(e.Table.Table) == t.spec.Table {
				t.rowsEvent(ctx, ev.Header.EventType, e, &b)
			}
		}
		if b.rows >= t.batch {
			if err := t.flush(ctx, &b); err != nil {
				return err
			}
		}
	}
}

// rowsEvent queues the writes of one rows event.
func (t *transfer) rowsEvent(ctx context.Context, typ replication.EventType, e *replication.RowsEvent, b *transferBatch) {
	switch typ {
	case replication.WRITE_ROWS_EVENTv1, replication.WRITE_ROWS_EVENTv2:
		for _, r := range e.Rows {
			t.upsert(ctx, b.pipe, nil, r)
		}
		b.rows += len(e.Rows)
	case replication.UPDATE_ROWS_EVENTv1, replication.UPDATE_ROWS_EVENTv2:
		for i := 0; i+1 < len(e.Rows); i += 2 {
			t.upsert(ctx, b.pipe, e.Rows[i], e.Rows[i+1])
		}
		b.rows += len(e.Rows) / 2
	case replication.DELETE_ROWS_EVENTv1, replication.DELETE_ROWS_EVENTv2:
		for _, r := range e.Rows {
			id, keys := t.indexKeys(r)
			for _, k := range keys {
				b.pipe.HDel(ctx, k, id)
			}
		}
		b.rows += len(e.Rows)
	}
}

// upsert writes the after image into its keys and removes it from the before image's keys it
// left.
func (t *transfer) upsert(ctx context.Context, p redis.Pipeliner, before, after []any) {
	id, keys := t.indexKeys(after)
	if before != nil {
		_, old := t.indexKeys(before)
		for i, k := range old {
			if k != keys[i] {
				p.HDel(ctx, k, id)
			}
		}
	}
	row := make(map[string]any, len(t.columns))
	for i, c := range t.columns {
		if i < len(after) {
			row[c] = after[i]
		}
	}
	value, _ := json.Marshal(row)
	for _, k := range keys {
		p.HSet(ctx, k, id, value)
	}
}

// indexKeys are a row image's key and index keys.
func (t *transfer) indexKeys(image []any) (string, []string) {
	byName := func(name string) *string {
		for i, c := range t.columns {
			if c == name && i < len(image) {
				s := valueText(image[i])
				return &s
			}
		}
		return nil
	}
	keys := make([]string, len(t.spec.Dimensions))
	for i, d := range t.spec.Dimensions {
		vals := make([]*string, len(d))
		for j, p := range d {
			vals[j] = byName(p.Column)
		}
		keys[i] = t.keys.Index(d, vals)
	}
	id := byName(t.spec.Key)
	if id == nil {
		return "", keys
	}
	return *id, keys
}

// valueText is a binlog value's text (the bench table has integers and strings only).
func valueText(v any) string {
	switch x := v.(type) {
	case int32:
		return strconv.FormatInt(int64(x), 10)
	case int64:
		return strconv.FormatInt(x, 10)
	case string:
		return x
	case []byte:
		return string(x)
	}
	return ""
}

// flush sends the pipeline with the position of the last complete transaction.
func (t *transfer) flush(ctx context.Context, b *transferBatch) error {
	if b.rows == 0 && b.committed == b.recorded {
		return nil
	}
	b.pipe.Set(ctx, t.posKey, b.committed.String(), 0)
	if _, err := b.pipe.Exec(ctx); err != nil {
		return err
	}
	t.rows.Add(int64(b.rows))
	b.rows, b.recorded = 0, b.committed
	at := b.committed
	t.done.Store(&at)
	return nil
}

// syncerConfig is the replica connection of a reader.
func (e *mysqlEnv) syncerConfig() replication.BinlogSyncerConfig {
	return replication.BinlogSyncerConfig{
		ServerID: 1<<30 + uint32(time.Now().UnixNano()%(1<<29)), Flavor: e.flavor,
		Host: e.host, Port: e.port, User: e.user, Password: e.password,
		DisableRetrySync: true, HeartbeatPeriod: 10 * time.Second, ReadTimeout: 30 * time.Second,
		FillZeroLogPos: e.flavor == index.FlavorMariaDB,
		Logger:         slog.New(slog.DiscardHandler),
	}
}
