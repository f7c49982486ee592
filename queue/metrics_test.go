package queue

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/redstate/redstate/metrics"
)

func TestMetrics_CountJobsAndReadDepths(t *testing.T) {
	m := metrics.New()
	q := NewMetrics(m)
	q.ObserveJob("report:queue", OutcomeAcked, 20*time.Millisecond)
	q.ObserveJob("report:queue", OutcomeRetried, 10*time.Millisecond)
	q.ObserveJob("report:queue", OutcomeMalformed, 0)
	q.WatchDepth("report:queue", func(context.Context) (Stats, error) {
		return Stats{Pending: 3, Running: 1, Retrying: 2, Scheduled: 5, Dead: 4}, nil
	})
	q.WatchDepth("broken", func(context.Context) (Stats, error) { return Stats{}, errors.New("down") })

	want := `
# HELP redstate_queue_depth Jobs of a queue by place (pending, running, retrying, scheduled, dead), read from the broker at scrape time.
# TYPE redstate_queue_depth gauge
redstate_queue_depth{place="dead",queue="report:queue"} 4
redstate_queue_depth{place="pending",queue="report:queue"} 3
redstate_queue_depth{place="retrying",queue="report:queue"} 2
redstate_queue_depth{place="running",queue="report:queue"} 1
redstate_queue_depth{place="scheduled",queue="report:queue"} 5
# HELP redstate_queue_jobs_total Jobs handled by queue workers, by queue and outcome (acked, retried, dead, malformed, lost).
# TYPE redstate_queue_jobs_total counter
redstate_queue_jobs_total{outcome="acked",queue="report:queue"} 1
redstate_queue_jobs_total{outcome="malformed",queue="report:queue"} 1
redstate_queue_jobs_total{outcome="retried",queue="report:queue"} 1
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "redstate_queue_depth", "redstate_queue_jobs_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(q.duration); n != 1 {
		t.Errorf("duration series = %d", n)
	}

	var nilQ *Metrics
	nilQ.ObserveJob("q", OutcomeAcked, time.Second)
	nilQ.WatchDepth("q", nil)
	if NewMetrics(nil) != nil {
		t.Error("NewMetrics(nil) != nil")
	}
}
