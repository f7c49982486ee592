package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/redstate/redstate/config"
	"github.com/redstate/redstate/executor"
	"github.com/redstate/redstate/executor/redisstate"
	"github.com/redstate/redstate/httpapi"
	"github.com/redstate/redstate/queue"
	"github.com/redstate/redstate/redisconn"
)

// breakerReporter is what the resilient build-status store tells about its circuit breaker.
type breakerReporter interface {
	BreakerState() string
	Pending() int
}

// overviewOf builds the dashboard's overview: the Redis deployment (pinged now) and each
// block's backend and status.
func overviewOf(ctx context.Context, cfg config.Config, builds *buildBackend, queues *queueBackend, exec *executorBackend, idx *indexBackend, fd *feedBackend) httpapi.Overview {
	o := httpapi.Overview{Version: version(), Redis: redisOverview(ctx, cfg, builds)}
	redisDown := cfg.Redis.Configured() && !o.Redis.Reachable

	b := httpapi.BlockOverview{Name: "builds", Backend: builds.name, Status: "ok"}
	if br, ok := builds.store.(breakerReporter); ok {
		b.Detail = fmt.Sprintf("policy %s, breaker %s", cfg.Publish.BuildStatus.Resilience.Policy, br.BreakerState())
		if br.BreakerState() != "closed" || br.Pending() > 0 {
			b.Status = "degraded"
			b.Detail += fmt.Sprintf(", %d writes waiting for Redis", br.Pending())
		}
	}
	if redisDown && b.Status == "ok" {
		b.Status, b.Detail = "degraded", "Redis does not answer; "+b.Detail
	}
	o.Blocks = append(o.Blocks, b)

	q := httpapi.BlockOverview{Name: "queue", Backend: queues.name + " (records: " + cfg.Queue.RecordStore + ")", Status: "ok",
		Detail: fmt.Sprintf("%d queues", len(queues.admins))}
	if redisDown {
		q.Status, q.Detail = "degraded", "Redis does not answer: workers retry, submits are kept in SQL"
	}
	o.Blocks = append(o.Blocks, q)

	e := httpapi.BlockOverview{Name: "executor", Backend: queues.name, Status: "ok"}
	if d := exec.degraded(); d != "" {
		e.Status, e.Detail = "degraded", d
		o.Degraded = append(o.Degraded, d)
	}
	o.Blocks = append(o.Blocks, e)

	i := httpapi.BlockOverview{Name: "index", Backend: queues.name, Status: "ok"}
	if idx.indexer == nil {
		i.Status = "off"
	} else {
		i.Detail = fmt.Sprintf("%d tables", len(idx.indexer.Tables()))
	}
	o.Blocks = append(o.Blocks, i)

	f := httpapi.BlockOverview{Name: "feed", Backend: queues.name + " + sql", Status: "ok"}
	if fd.svc == nil {
		f.Status = "off"
	} else {
		if st := fd.svc.BreakerState(); st != "" {
			f.Detail = "breaker " + st
			if st != "closed" {
				f.Status, f.Detail = "degraded", "breaker "+st+": reads come from SQL, missed writes are repaired when Redis answers"
			}
		}
		if redisDown && f.Status == "ok" {
			f.Status, f.Detail = "degraded", "Redis does not answer: reads come from SQL"
		}
	}
	o.Blocks = append(o.Blocks, f)
	return o
}

// redisOverview describes the configured Redis and pings it.
func redisOverview(ctx context.Context, cfg config.Config, builds *buildBackend) httpapi.RedisOverview {
	r := httpapi.RedisOverview{Mode: "memory"}
	switch {
	case len(cfg.Redis.ClusterAddrs) > 0:
		r.Mode = "cluster"
	case cfg.Redis.Sentinel.MasterName != "":
		r.Mode = "sentinel"
	case cfg.Redis.URL != "":
		r.Mode = "standalone"
	}
	if r.Mode == "memory" || builds.ready == nil {
		return r
	}
	r.Describe = redisconn.Describe(cfg.Redis)
	start := time.Now()
	if err := builds.ready(ctx); err != nil {
		r.Error = err.Error()
		return r
	}
	r.Reachable, r.LatencyMS = true, float64(time.Since(start).Microseconds())/1000
	return r
}

// throughputStore returns the broker as the shared throughput store, or nil.
func (qb *queueBackend) throughputStore() queue.ThroughputStore {
	ts, _ := qb.broker.(queue.ThroughputStore)
	return ts
}

// sourceStatus reports the index sources' progress for the API.
func (ib *indexBackend) sourceStatus() []httpapi.IndexSourceStatus {
	var out []httpapi.IndexSourceStatus
	if ib.postgres != nil {
		out = append(out, httpapi.IndexSourceStatus{Name: "postgres", BackfilledRows: ib.postgres.BackfilledRows.Load(),
			LagBytes: ib.postgres.LagBytes.Load(), LagSeconds: ib.postgres.LagSeconds()})
	}
	if ib.streams != nil {
		out = append(out, httpapi.IndexSourceStatus{Name: "streams"})
	}
	return out
}

// lister returns the executor's state lister on Redis, or nil (memory backend).
func (eb *executorBackend) lister(cfg config.Config) httpapi.ExecutorLister {
	if eb.client == nil {
		return nil
	}
	keys, err := executor.NewKeysUnder(cfg.Namespace, cfg.Executor.Persistence.Redis.WithDefaults().Namespace)
	if err != nil {
		return nil
	}
	l, err := redisstate.NewLister(eb.client, redisstate.Options{Keys: keys})
	if err != nil {
		return nil
	}
	return l
}
