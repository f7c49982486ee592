package cli

import (
	"context"
	"time"

	"github.com/redstate/redstate/httpapi"
	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/kafkasource"
	"github.com/redstate/redstate/index/mysqlsource"
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

// indexSourceStatus reports the pulled sources' progress for the API: the common status, plus the
// binlog source's and the Kafka group's detail.
func indexSourceStatus(pulled []index.Source) []httpapi.IndexSourceStatus {
	var out []httpapi.IndexSourceStatus
	now := time.Now()
	for _, src := range pulled {
		s := src.Status()
		st := httpapi.IndexSourceStatus{Name: s.Name, BackfilledRows: s.Copied, LagSeconds: s.Lag.Seconds, Events: s.Events, Position: s.Position}
		switch s.Lag.Unit {
		case index.LagBytes:
			st.LagBytes = s.Lag.Behind
		case index.LagRecords:
			st.LagRecords = s.Lag.Behind
		}
		switch d := s.Detail.(type) {
		case *mysqlsource.Detail:
			st.PendingEvents, st.EventsPerSecond, st.SnapshotRowsEstimate = d.PendingEvents, d.EventsPerSecond, d.SnapshotEstimate
			st.SnapshotPercent, st.Streaming = d.SnapshotPercent, d.Streaming
		case *kafkasource.Detail:
			kafkaGroupStatus(&st, d, now)
		}
		out = append(out, st)
	}
	return out
}
