package executor

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redstate/redstate/metrics"
)

// Metrics are the stage executor's metrics, registered in a metrics.Metrics registry:
//
//	redstate_executor_keys{type}                     keys per type (ckpt, task, plan, index, lock, spec), from the last inspection
//	redstate_executor_locks_held                     tenant locks held
//	redstate_executor_locks_leaked                   locks held for a task whose projection is already terminal
//	redstate_executor_projection_lag_seconds         event time → projection write
//	redstate_executor_stages_total{handler,outcome}  stage executions (ok, error)
//	redstate_executor_stage_duration_seconds{handler}
//	redstate_executor_tasks_total{status}            runs ended (COMPLETED, FAILED, CANCELLED, PAUSED)
//	redstate_executor_orphans_total                  RUNNING tasks marked interrupted
//	redstate_executor_degraded                       1 while the executor runs on memory because Redis was unreachable at startup
//
// It implements Observer. A nil *Metrics records nothing.
type Metrics struct {
	keys     *prometheus.GaugeVec
	held     prometheus.Gauge
	leaked   prometheus.Gauge
	lag      prometheus.Histogram
	stages   *prometheus.CounterVec
	duration *prometheus.HistogramVec
	tasks    *prometheus.CounterVec
	orphans  prometheus.Counter
	degraded prometheus.Gauge
}

var _ Observer = (*Metrics)(nil)

// NewMetrics registers the executor metrics in m's registry (nil when m is nil).
func NewMetrics(m *metrics.Metrics) *Metrics {
	if m == nil {
		return nil
	}
	e := &Metrics{
		keys: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "redstate_executor_keys",
			Help: "Executor keys per type (ckpt, task, plan, index, lock, spec) at the last inspection."}, []string{"type"}),
		held: prometheus.NewGauge(prometheus.GaugeOpts{Name: "redstate_executor_locks_held",
			Help: "Tenant locks held at the last inspection."}),
		leaked: prometheus.NewGauge(prometheus.GaugeOpts{Name: "redstate_executor_locks_leaked",
			Help: "Tenant locks held for a task whose projection is already terminal (leaks), at the last inspection."}),
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "redstate_executor_projection_lag_seconds",
			Help: "Time from an executor event to its projection write.", Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10)}),
		stages: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "redstate_executor_stages_total",
			Help: "Stage executions by handler and outcome (ok, error)."}, []string{"handler", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "redstate_executor_stage_duration_seconds",
			Help: "Stage handler run time by handler.", Buckets: metrics.JobBuckets}, []string{"handler"}),
		tasks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "redstate_executor_tasks_total",
			Help: "Task runs ended, by resulting status."}, []string{"status"}),
		orphans: prometheus.NewCounter(prometheus.CounterOpts{Name: "redstate_executor_orphans_total",
			Help: "RUNNING tasks whose tenant lock had expired, marked FAILED (interrupted)."}),
		degraded: prometheus.NewGauge(prometheus.GaugeOpts{Name: "redstate_executor_degraded",
			Help: "1 while the executor runs on the memory store because Redis was unreachable at startup."}),
	}
	m.Registry().MustRegister(e.keys, e.held, e.leaked, e.lag, e.stages, e.duration, e.tasks, e.orphans, e.degraded)
	return e
}

// ProjectionLag implements Observer.
func (e *Metrics) ProjectionLag(d time.Duration) {
	if e != nil {
		e.lag.Observe(d.Seconds())
	}
}

// StageFinished implements Observer.
func (e *Metrics) StageFinished(handler string, ok bool, d time.Duration) {
	if e == nil {
		return
	}
	outcome := "ok"
	if !ok {
		outcome = "error"
	}
	e.stages.WithLabelValues(handler, outcome).Inc()
	e.duration.WithLabelValues(handler).Observe(d.Seconds())
}

// TaskFinished implements Observer.
func (e *Metrics) TaskFinished(status TaskStatus) {
	if e != nil {
		e.tasks.WithLabelValues(string(status)).Inc()
	}
}

// OrphanMarked implements Observer.
func (e *Metrics) OrphanMarked() {
	if e != nil {
		e.orphans.Inc()
	}
}

// State implements Observer.
func (e *Metrics) State(st StateStats, leaked int) {
	if e == nil {
		return
	}
	for _, typ := range []string{"ckpt", "task", "plan", "index", "lock", "spec"} {
		e.keys.WithLabelValues(typ).Set(float64(st.Keys[typ]))
	}
	e.held.Set(float64(len(st.Locks)))
	e.leaked.Set(float64(leaked))
}

// SetDegraded sets redstate_executor_degraded.
func (e *Metrics) SetDegraded(on bool) {
	if e == nil {
		return
	}
	v := 0.0
	if on {
		v = 1
	}
	e.degraded.Set(v)
}
