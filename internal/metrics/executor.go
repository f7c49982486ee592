package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redstate/redstate/executor"
)

// ExecutorMetrics are the stage executor's metrics (seed 002 §6.6), registered in a Metrics
// registry:
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
// It implements executor.Observer. A nil *ExecutorMetrics records nothing.
type ExecutorMetrics struct {
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

var _ executor.Observer = (*ExecutorMetrics)(nil)

// NewExecutorMetrics registers the executor metrics in m's registry (nil when m is nil).
func NewExecutorMetrics(m *Metrics) *ExecutorMetrics {
	if m == nil {
		return nil
	}
	e := &ExecutorMetrics{
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
			Help: "Stage handler run time by handler.", Buckets: queueBuckets}, []string{"handler"}),
		tasks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "redstate_executor_tasks_total",
			Help: "Task runs ended, by resulting status."}, []string{"status"}),
		orphans: prometheus.NewCounter(prometheus.CounterOpts{Name: "redstate_executor_orphans_total",
			Help: "RUNNING tasks whose tenant lock had expired, marked FAILED (interrupted)."}),
		degraded: prometheus.NewGauge(prometheus.GaugeOpts{Name: "redstate_executor_degraded",
			Help: "1 while the executor runs on the memory store because Redis was unreachable at startup."}),
	}
	m.registry.MustRegister(e.keys, e.held, e.leaked, e.lag, e.stages, e.duration, e.tasks, e.orphans, e.degraded)
	return e
}

// ProjectionLag implements executor.Observer.
func (e *ExecutorMetrics) ProjectionLag(d time.Duration) {
	if e != nil {
		e.lag.Observe(d.Seconds())
	}
}

// StageFinished implements executor.Observer.
func (e *ExecutorMetrics) StageFinished(handler string, ok bool, d time.Duration) {
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

// TaskFinished implements executor.Observer.
func (e *ExecutorMetrics) TaskFinished(status executor.TaskStatus) {
	if e != nil {
		e.tasks.WithLabelValues(string(status)).Inc()
	}
}

// OrphanMarked implements executor.Observer.
func (e *ExecutorMetrics) OrphanMarked() {
	if e != nil {
		e.orphans.Inc()
	}
}

// State implements executor.Observer.
func (e *ExecutorMetrics) State(st executor.StateStats, leaked int) {
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
func (e *ExecutorMetrics) SetDegraded(on bool) {
	if e == nil {
		return
	}
	v := 0.0
	if on {
		v = 1
	}
	e.degraded.Set(v)
}
