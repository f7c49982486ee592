// Package metrics holds redstate's Prometheus metrics, shared by every block. Each Metrics value
// owns its own registry (no global state), so tests and several servers in one process never
// collide.
//
// Error counting rule: redstate_store_operation_errors_total counts every operation that returned
// an error EXCEPT ENOTFOUND. A missing or expired build is a normal answer of a read, not a
// failure of the store, and counting it would make the error rate meaningless for a registry that
// is mostly polled for builds that may have expired. Every other code is counted, labelled with
// its code (unavailable, internal, conflict, precondition_failed, invalid, too_large, …), so
// alerts select what they care about; the seed's "Redis connection failure rate > 5%" alert is
//
//	sum(rate(redstate_store_operation_errors_total{code="unavailable"}[5m]))
//	  / sum(rate(redstate_store_operation_duration_seconds_count[5m])) > 0.05
package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/internal/buildinfo"
)

// Breaker states as exported by redstate_breaker_state.
const (
	// BreakerClosed is the state of a breaker that lets calls through (gauge value 0).
	BreakerClosed = "closed"
	// BreakerHalfOpen is the state of a breaker that lets trial calls through (gauge value 1).
	BreakerHalfOpen = "half-open"
	// BreakerOpen is the state of a breaker that fails calls immediately (gauge value 2).
	BreakerOpen = "open"
)

// Write-back results as counted by redstate_fallback_writeback_total.
const (
	// WriteBackWritten: a fallback write reached the primary store.
	WriteBackWritten = "written"
	// WriteBackSuperseded: the primary held a newer value; the fallback write was dropped.
	WriteBackSuperseded = "superseded"
	// WriteBackFailed: a write-back attempt failed (retried next round unless permanent).
	WriteBackFailed = "failed"
)

// JobBuckets span 1 ms to about 16 min, quadrupling: no-op handlers, webhooks, stages and a 30 s
// report generation all land inside. The queue's and the executor's durations use them.
var JobBuckets = prometheus.ExponentialBuckets(0.001, 4, 11)

// opBuckets span 0.1 ms to about 1.6 s, doubling: a loopback GET sits in the first buckets, a
// slow Redis or a breaker-bound timeout in the last ones.
var opBuckets = prometheus.ExponentialBuckets(0.0001, 2, 15)

// Metrics is the set of redstate metrics, registered in its own registry. Its methods are safe
// for concurrent use. A nil *Metrics is valid and records nothing.
type Metrics struct {
	registry    *prometheus.Registry
	opDuration  *prometheus.HistogramVec
	opErrors    *prometheus.CounterVec
	breaker     *prometheus.GaugeVec
	transitions *prometheus.CounterVec
	pending     *prometheus.GaugeVec
	writeBack   *prometheus.CounterVec
}

// New returns a fresh registry holding the Go and process collectors and redstate's metrics.
func New() *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		opDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "redstate_store_operation_duration_seconds",
			Help:    "Duration of store operations, by block, operation and backend.",
			Buckets: opBuckets,
		}, []string{"block", "op", "backend"}),
		opErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "redstate_store_operation_errors_total",
			Help: "Store operations that failed, by error code (not_found is not counted).",
		}, []string{"block", "op", "backend", "code"}),
		breaker: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "redstate_breaker_state",
			Help: "Circuit breaker state: 0 closed, 1 half-open, 2 open.",
		}, []string{"block"}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "redstate_breaker_transitions_total",
			Help: "Circuit breaker state transitions, by target state.",
		}, []string{"block", "to"}),
		pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "redstate_fallback_writes_pending",
			Help: "Builds written to the in-memory fallback and not yet written back.",
		}, []string{"block"}),
		writeBack: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "redstate_fallback_writeback_total",
			Help: "Fallback write-back outcomes: written, superseded, failed.",
		}, []string{"block", "result"}),
	}
	m.registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.opDuration, m.opErrors, m.breaker, m.transitions, m.pending, m.writeBack,
		buildInfo(buildinfo.Read()),
	)
	return m
}

// Registry returns the registry to expose (promhttp.HandlerFor(m.Registry(), ...)).
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }

// ObserveOp records one store operation: its duration always, and an error by code unless err is
// nil or ENOTFOUND (see the package comment).
func (m *Metrics) ObserveOp(block, op, backend string, d time.Duration, err error) {
	if m == nil {
		return
	}
	m.opDuration.WithLabelValues(block, op, backend).Observe(d.Seconds())
	if code := redstate.ErrorCode(err); code != "" && code != redstate.ENOTFOUND {
		m.opErrors.WithLabelValues(block, op, backend, code).Inc()
	}
}

// SetBreakerState sets the breaker gauge of block to state (BreakerClosed, BreakerHalfOpen or
// BreakerOpen) without counting a transition; used for the initial state.
func (m *Metrics) SetBreakerState(block, state string) {
	if m == nil {
		return
	}
	m.breaker.WithLabelValues(block).Set(breakerValue(state))
}

// BreakerTransition records that block's breaker moved to state: it sets the gauge and counts
// the transition.
func (m *Metrics) BreakerTransition(block, to string) {
	if m == nil {
		return
	}
	m.breaker.WithLabelValues(block).Set(breakerValue(to))
	m.transitions.WithLabelValues(block, to).Inc()
}

// SetPending sets the number of fallback writes of block waiting to be written back.
func (m *Metrics) SetPending(block string, n int) {
	if m == nil {
		return
	}
	m.pending.WithLabelValues(block).Set(float64(n))
}

// AddWriteBack counts n write-back outcomes of block with result WriteBackWritten,
// WriteBackSuperseded or WriteBackFailed.
func (m *Metrics) AddWriteBack(block, result string, n int) {
	if m == nil || n == 0 {
		return
	}
	m.writeBack.WithLabelValues(block, result).Add(float64(n))
}

func breakerValue(state string) float64 {
	switch state {
	case BreakerHalfOpen:
		return 1
	case BreakerOpen:
		return 2
	default:
		return 0
	}
}
