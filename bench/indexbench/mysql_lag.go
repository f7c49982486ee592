package indexbench

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redstate/redstate/bench"
	"github.com/redstate/redstate/sqldb"
)

// Lag phase's shape.
const (
	// lagRows are the rows the lag phase's writers change, cycled (ids after the bulk's).
	lagRows = 10000
	// lagWriters are the concurrent writer connections.
	lagWriters = 4
	// samplesPerSecond is how many commits per second are timed.
	samplesPerSecond = 200
	// pollEvery is the pause between two polls of the pending samples; pollAtOnce bounds the
	// samples one poll reads (the oldest: the stream applies in commit order, so a younger
	// sample is rarely visible before an older one), so that a growing lag does not grow the
	// poll's own load on Redis.
	pollEvery  = 250 * time.Microsecond
	pollAtOnce = 4
	// drainLimit bounds the wait for the last samples after the writers stop.
	drainLimit = 30 * time.Second
)

// sample is one timed change: row id's name became "s<seq>" at commit.
type sample struct {
	key, id string
	seq     int64
	commit  time.Time
}

// lagPhase measures ours at a steady rate: it streams from the current position while
// lagWriters connections commit Rate row changes per second, in transactions of TxnRows rows
// (one multi-row INSERT … ON DUPLICATE KEY UPDATE, each row's name set to a new sequence
// number), for Duration. The first row of samplesPerSecond transactions a second is timed
// from the commit's acknowledgement to the moment a poll of its index key (HGET, every
// pollEvery, the oldest pollAtOnce pending) shows the new name.
func (e *mysqlEnv) lagPhase(ctx context.Context) (LagMeasurement, error) {
	var out LagMeasurement
	prefix := e.prefix + "-ours-lag"
	defer e.opts.Cleanup(ctx, prefix, 2*time.Minute)
	p0, err := e.position(ctx)
	if err != nil {
		return out, err
	}
	r, err := e.start(ctx, implOurs, prefix, p0)
	if err != nil {
		return out, err
	}
	defer func() { _ = r.stop() }()
	if err := e.warmUp(ctx, implOurs, r); err != nil {
		return out, err
	}
	ix := r.reader.(ours).ix
	txnRate := float64(e.opts.Rate) / float64(e.opts.TxnRows)
	txns := int64(e.opts.Duration.Seconds() * txnRate)
	sampleEvery := max(1, int64(txnRate/samplesPerSecond))
	e.opts.Progressf("lag: %d row changes/s in transactions of %d rows, %d writers, %s; every %d-th transaction timed\n",
		e.opts.Rate, e.opts.TxnRows, lagWriters, e.opts.Duration, sampleEvery)

	samples := make(chan sample, 4096)
	var lags []time.Duration
	pollErr := make(chan error, 1)
	go func() {
		var err error
		lags, err = e.poll(ctx, samples)
		pollErr <- err
	}()
	var committed, next atomic.Int64
	var wg sync.WaitGroup
	writeErrs := make(chan error, lagWriters)
	t0 := time.Now()
	stopProgress := lagProgress(e.opts.Target, &committed, t0)
	for range lagWriters {
		wg.Go(func() {
			for k := next.Add(1) - 1; k < txns && ctx.Err() == nil; k = next.Add(1) - 1 {
				if wait := time.Until(t0.Add(time.Duration(float64(k) / txnRate * float64(time.Second)))); wait > 0 {
					time.Sleep(wait)
				}
				s, err := e.lagTxn(ctx, k)
				if err != nil {
					writeErrs <- err
					return
				}
				committed.Add(int64(e.opts.TxnRows))
				if k%sampleEvery == 0 {
					if s.key, err = ix.QueryKey(e.spec.DB, e.spec.Table, lagConditions(s.id)); err != nil {
						writeErrs <- err
						return
					}
					samples <- s
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(t0)
	stopProgress()
	close(samples)
	close(writeErrs)
	if err := <-writeErrs; err != nil {
		return out, err
	}
	if err := <-pollErr; err != nil {
		return out, err
	}
	slices.Sort(lags)
	out = LagMeasurement{Rate: float64(committed.Load()) / elapsed.Seconds(), Samples: len(lags),
		P50: bench.Percentile(lags, 50), P99: bench.Percentile(lags, 99)}
	if len(lags) > 0 {
		out.Max = lags[len(lags)-1]
	}
	return out, nil
}

// lagID is the id of the lag phase's n-th row change.
func (e *mysqlEnv) lagID(n int64) int64 { return int64(e.opts.Rows) + 1 + n%lagRows }

// lagConditions are the las and cat of a lag row (the bulk's formula).
func lagConditions(id string) map[string]string {
	n, _ := strconv.Atoi(id)
	return map[string]string{"las": strconv.Itoa(1 + n%lasValues), "cat": strconv.Itoa(1 + (n/lasValues)%catValues)}
}

// lagTxn commits the k-th transaction and returns its first row as a sample.
func (e *mysqlEnv) lagTxn(ctx context.Context, k int64) (sample, error) {
	var q strings.Builder
	q.WriteString("INSERT INTO " + e.table() + " (id, lastAddrId, categoryId, brandId, name) VALUES ")
	first := k * int64(e.opts.TxnRows)
	for seq := first; seq < first+int64(e.opts.TxnRows); seq++ {
		if seq > first {
			q.WriteByte(',')
		}
		id := e.lagID(seq)
		fmt.Fprintf(&q, "(%d,%d,%d,%d,'s%d')", id, 1+id%lasValues, 1+(id/lasValues)%catValues, 1+id%braValues, seq)
	}
	q.WriteString(" ON DUPLICATE KEY UPDATE name = VALUES(name)")
	if _, err := e.db.ExecContext(ctx, q.String()); err != nil {
		return sample{}, sqldb.Map(err, "bench: lag writer")
	}
	return sample{id: strconv.FormatInt(e.lagID(first), 10), seq: first, commit: time.Now()}, nil
}

// poll times the samples: it reads the oldest pollAtOnce pending samples' rows in their index
// keys (one pipeline of HGET) every pollEvery, until samples is closed and every sample was
// seen (or drainLimit passed after the close: an error).
func (e *mysqlEnv) poll(ctx context.Context, samples <-chan sample) ([]time.Duration, error) {
	var pending []sample
	var lags []time.Duration
	var closedAt time.Time
	for {
		if closedAt.IsZero() {
			if len(pending) == 0 {
				s, ok := <-samples
				if !ok {
					return lags, nil
				}
				pending = append(pending, s)
			}
		more:
			for {
				select {
				case s, ok := <-samples:
					if !ok {
						closedAt = time.Now()
						break more
					}
					pending = append(pending, s)
				default:
					break more
				}
			}
		}
		if len(pending) == 0 {
			return lags, nil
		}
		if !closedAt.IsZero() && time.Since(closedAt) > drainLimit {
			return lags, fmt.Errorf("lag: %d changes not visible in the index %s after the writers stopped", len(pending), drainLimit)
		}
		polled := pending[:min(len(pending), pollAtOnce)]
		cmds, err := e.opts.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, s := range polled {
				p.HGet(ctx, s.key, s.id)
			}
			return nil
		})
		if err != nil && err != redis.Nil {
			return lags, err
		}
		now := time.Now()
		kept := pending[:0]
		for i, s := range pending {
			if i < len(polled) && nameSeq(cmds[i].(*redis.StringCmd).Val()) >= s.seq {
				lags = append(lags, now.Sub(s.commit))
			} else {
				kept = append(kept, s)
			}
		}
		pending = kept
		time.Sleep(pollEvery)
	}
}

// nameSeq is the sequence number in a lag row's JSON name ("s<seq>"), -1 when none.
func nameSeq(row string) int64 {
	var v struct {
		Name string `json:"name"`
	}
	if row == "" || json.Unmarshal([]byte(row), &v) != nil || !strings.HasPrefix(v.Name, "s") {
		return -1
	}
	n, err := strconv.ParseInt(v.Name[1:], 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// lagProgress prints the changes committed every second until stopped.
func lagProgress(t bench.Target, committed *atomic.Int64, t0 time.Time) (stop func()) {
	quit, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case now := <-tick.C:
				n := committed.Load()
				t.Progressf("  lag: %d row changes committed in %.0fs (%.0f/s)\n", n, now.Sub(t0).Seconds(), float64(n)/now.Sub(t0).Seconds())
			}
		}
	}()
	return func() { close(quit); <-finished }
}
