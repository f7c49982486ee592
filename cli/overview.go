package cli

import (
	"context"
	"time"

	"github.com/redstate/redstate/httpapi"
	"github.com/redstate/redstate/internal/buildinfo"
	"github.com/redstate/redstate/redisconn"
)

// overview builds the dashboard's overview from the components' health: the Redis deployment
// (pinged now) and each block's backend and status, in start order; Degraded lists what makes
// the process unready.
func (a *app) overview(ctx context.Context) httpapi.Overview {
	build := buildinfo.Read()
	o := httpapi.Overview{Version: build.Version, Build: build, Redis: a.redisOverview(ctx)}
	for _, st := range a.health(ctx) {
		o.Blocks = append(o.Blocks, httpapi.BlockOverview{Name: st.Name, Backend: st.Backend, Status: string(st.State), Detail: st.Detail})
		if st.Unready != "" {
			o.Degraded = append(o.Degraded, st.Unready)
		}
	}
	return o
}

// redisOverview describes the configured Redis and pings it.
func (a *app) redisOverview(ctx context.Context) httpapi.RedisOverview {
	cfg := a.cfg
	r := httpapi.RedisOverview{Mode: "memory"}
	switch {
	case len(cfg.Redis.ClusterAddrs) > 0:
		r.Mode = "cluster"
	case cfg.Redis.Sentinel.MasterName != "":
		r.Mode = "sentinel"
	case cfg.Redis.URL != "":
		r.Mode = "standalone"
	}
	if a.redis == nil {
		return r
	}
	r.Describe = redisconn.Describe(cfg.Redis)
	took, err := a.reach.Check(ctx)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	r.Reachable, r.LatencyMS = true, float64(took.Microseconds())/1000
	return r
}

// sourceStatus reports the index sources' progress for the API.
func (ib *indexBackend) sourceStatus() []httpapi.IndexSourceStatus {
	var out []httpapi.IndexSourceStatus
	if ib.postgres != nil {
		out = append(out, httpapi.IndexSourceStatus{Name: "postgres", BackfilledRows: ib.postgres.BackfilledRows.Load(),
			LagBytes: ib.postgres.LagBytes.Load(), LagSeconds: ib.postgres.LagSeconds(), Events: ib.postgres.Events.Load()})
	}
	if my := ib.mysql; my != nil {
		st := httpapi.IndexSourceStatus{Name: "mysql", BackfilledRows: my.SnapshotRows.Load(), LagSeconds: my.LagSeconds(),
			LagBytes: my.LagBytes(), Events: my.Events.Load(), PendingEvents: my.PendingEvents(), EventsPerSecond: my.EventsPerSecond(),
			SnapshotRowsEstimate: my.SnapshotEstimate(), SnapshotPercent: my.SnapshotPercent(), Streaming: my.Streaming()}
		if p := my.Position(); p.File != "" {
			st.Position = p.String()
		}
		out = append(out, st)
	}
	if ib.streams != nil {
		out = append(out, httpapi.IndexSourceStatus{Name: "streams"})
	}
	if ib.kafka != nil {
		out = append(out, kafkaStatus(ib.kafka, time.Now()))
	}
	return out
}
