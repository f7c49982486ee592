package indexbench

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redstate/redstate/index/mysqlsource"
	"github.com/redstate/redstate/redisconn"
	"github.com/redstate/redstate/sqldb"
)

// insertRows is the rows of one multi-row INSERT of the bulk.
const insertRows = 1000

// bulkChanges is the row changes of a bulk over rows rows: every row inserted, every row
// updated, a tenth deleted.
func bulkChanges(rows int) int { return 2*rows + rows/10 }

// bulkPhase measures the bulk end to end, ours then the transfer, each alone and already
// streaming (the table emptied by TRUNCATE in between, so both bulks are the same
// statements), then both catching up on the binlog range of the first bulk, transfer then
// ours.
func (e *mysqlEnv) bulkPhase(ctx context.Context, out *MySQLMeasurements) error {
	total := bulkChanges(e.opts.Rows)
	e.opts.Progressf("bulk: %d rows: multi-row INSERTs of %d, an UPDATE of every row moving it to another category, a DELETE of a tenth: %d row changes; batches of %d\n",
		e.opts.Rows, insertRows, total, e.opts.Batch)
	var live [2]time.Duration
	var from, end mysqlsource.Position
	for i, impl := range []string{implOurs, implTransfer} {
		if i > 0 {
			if _, err := e.db.ExecContext(ctx, "TRUNCATE TABLE "+e.table()); err != nil {
				return sqldb.Map(err, "bench: truncate")
			}
		}
		p0, err := e.position(ctx)
		if err != nil {
			return err
		}
		prefix := e.prefix + "-" + impl + "-live"
		r, err := e.start(ctx, impl, prefix, p0)
		if err != nil {
			return err
		}
		start, sqlTime, stop, err := e.liveBulk(ctx, impl, r)
		if err == nil {
			live[i], err = e.await(ctx, "bulk/"+impl, r, stop, start, total)
		}
		if serr := r.stop(); err == nil && serr != nil {
			err = serr
		}
		e.opts.Cleanup(ctx, prefix, 2*time.Minute)
		if err != nil {
			return err
		}
		if i == 0 {
			from, end, out.SQLSeconds = start0(r, p0), stop, sqlTime.Seconds()
		}
	}
	out.Bulk = Measurement{Name: "index.mysql.bulk", Events: total,
		Ours: float64(total) / live[0].Seconds(), Baseline: float64(total) / live[1].Seconds()}

	var catchUp, cpu [2]time.Duration
	for _, impl := range []string{implTransfer, implOurs} {
		prefix := e.prefix + "-" + impl + "-catchup"
		t0 := time.Now()
		r, err := e.start(ctx, impl, prefix, from)
		if err != nil {
			return err
		}
		// The server's CPU from the reader's start (after ours' layout check) to the end of the
		// range: the catch-up is each reader alone on the server.
		cpu0, err := redisconn.ServerCPU(ctx, e.opts.Client)
		if err != nil {
			_ = r.stop()
			return err
		}
		d, err := e.await(ctx, "catch-up/"+impl, r, end, t0, total)
		cpu1, cerr := redisconn.ServerCPU(ctx, e.opts.Client)
		if err == nil {
			err = cerr
		}
		if serr := r.stop(); err == nil && serr != nil {
			err = serr
		}
		e.opts.Cleanup(ctx, prefix, 2*time.Minute)
		if err != nil {
			return err
		}
		i := 1
		if impl == implOurs {
			i = 0
		}
		catchUp[i], cpu[i] = d, (cpu1-cpu0)/time.Duration(total)
	}
	out.CatchUp = Measurement{Name: "index.mysql.catchup", Events: total,
		Ours: float64(total) / catchUp[0].Seconds(), Baseline: float64(total) / catchUp[1].Seconds(),
		RedisCPU: cpu[0], BaselineRedisCPU: cpu[1]}
	return nil
}

// start0 is where the catch-up starts: the position the live reader had applied when the
// bulk began (after the warm-up transaction), p0 if none.
func start0(r *running, p0 mysqlsource.Position) mysqlsource.Position {
	if r.warm.File != "" {
		return r.warm
	}
	return p0
}

// liveBulk waits until r streams (a warm-up transaction applied), then runs the bulk. It
// returns when the bulk started, how long MariaDB took, and the position after it.
func (e *mysqlEnv) liveBulk(ctx context.Context, impl string, r *running) (time.Time, time.Duration, mysqlsource.Position, error) {
	var end mysqlsource.Position
	if err := e.warmUp(ctx, impl, r); err != nil {
		return time.Time{}, 0, end, err
	}
	e.opts.Progressf("bulk/%s: the reader streams; bulk starts\n", impl)
	start := time.Now()
	if err := e.bulk(ctx); err != nil {
		return start, 0, end, err
	}
	sqlTime := time.Since(start)
	end, err := e.position(ctx)
	e.opts.Progressf("bulk/%s: MariaDB executed the bulk in %s\n", impl, sqlTime.Round(time.Millisecond))
	return start, sqlTime, end, err
}

// warmUp commits a change of the warm-up row (id 0, outside the bulk's rows) and waits until
// r has applied it: r streams, and r.warm is the position after it.
func (e *mysqlEnv) warmUp(ctx context.Context, impl string, r *running) error {
	q := "INSERT INTO " + e.table() + " (id, lastAddrId, categoryId, brandId, name) VALUES (0, 0, 0, 0, 'warm-up') ON DUPLICATE KEY UPDATE yn = 1 - yn"
	if _, err := e.db.ExecContext(ctx, q); err != nil {
		return sqldb.Map(err, "bench: warm-up")
	}
	warm, err := e.position(ctx)
	if err != nil {
		return err
	}
	if _, err := e.await(ctx, "warm-up/"+impl, r, warm, time.Now(), 1); err != nil {
		return err
	}
	r.warm = warm
	return nil
}

// bulk runs the bulk's statements: multi-row INSERTs of insertRows, one UPDATE of every row
// that moves it to another category (another index key), one DELETE of a tenth of the rows.
func (e *mysqlEnv) bulk(ctx context.Context) error {
	n := e.opts.Rows
	var q strings.Builder
	for first := 1; first <= n; first += insertRows {
		q.Reset()
		q.WriteString("INSERT INTO " + e.table() + " (id, lastAddrId, categoryId, brandId, name) VALUES ")
		for id := first; id < first+insertRows && id <= n; id++ {
			if id > first {
				q.WriteByte(',')
			}
			fmt.Fprintf(&q, "(%d,%d,%d,%d,'item-%d')", id, 1+id%lasValues, 1+(id/lasValues)%catValues, 1+id%braValues, id)
		}
		if _, err := e.db.ExecContext(ctx, q.String()); err != nil {
			return sqldb.Map(err, "bench: bulk insert")
		}
	}
	for _, stmt := range []string{
		fmt.Sprintf("UPDATE %s SET categoryId = categoryId %% %d + 1 WHERE id > 0", e.table(), catValues),
		fmt.Sprintf("DELETE FROM %s WHERE id %% 10 = 0 AND id > 0", e.table()),
	} {
		if _, err := e.db.ExecContext(ctx, stmt); err != nil {
			return sqldb.Map(err, "bench: "+stmt)
		}
	}
	return nil
}
