package httpapi

import (
	"errors"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// routeUnmatched is the route label of requests no route matched (404, 405), so that the label
// stays bounded: it is always a registered mux pattern or this value, never a raw path.
const routeUnmatched = "unmatched"

// routeGuarded is the route label of requests the guard refused before routing (foreign Host,
// cross-origin, non-JSON state-changing request).
const routeGuarded = "guarded"

// httpMetrics are the API's Prometheus metrics. A nil *httpMetrics records nothing.
type httpMetrics struct {
	requests     *prometheus.CounterVec
	duration     *prometheus.HistogramVec
	streams      prometheus.Gauge
	streamsLimit prometheus.Gauge
}

// newHTTPMetrics registers the metrics with reg (nil: no metrics). Registering twice with the
// same registry reuses the collectors already there, so several handlers may share one.
func newHTTPMetrics(reg prometheus.Registerer) (*httpMetrics, error) {
	if reg == nil {
		return nil, nil
	}
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "redstate_http_requests_total",
		Help: "HTTP requests served, by route pattern, method and status code.",
	}, []string{"route", "method", "code"})
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "redstate_http_request_duration_seconds",
		Help:    "HTTP request duration (until the handler returns; SSE streams count their whole life), by route pattern and method.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
	}, []string{"route", "method"})
	streams := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "redstate_http_event_streams",
		Help: "Event streams (SSE) open now.",
	})
	streamsLimit := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "redstate_http_event_streams_limit",
		Help: "Event streams (SSE) this process accepts at once (server.max-event-streams); past it a new stream is 429.",
	})
	var err error
	if requests, err = register(reg, requests); err != nil {
		return nil, err
	}
	if streams, err = register(reg, streams); err != nil {
		return nil, err
	}
	if duration, err = register(reg, duration); err != nil {
		return nil, err
	}
	if streamsLimit, err = register(reg, streamsLimit); err != nil {
		return nil, err
	}
	return &httpMetrics{requests: requests, duration: duration, streams: streams, streamsLimit: streamsLimit}, nil
}

// register registers c, or returns the equal collector already registered.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		if are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing, nil
			}
		}
		return c, err
	}
	return c, nil
}

// streamGauge returns the open-streams gauge, nil without metrics.
func (m *httpMetrics) streamGauge() prometheus.Gauge {
	if m == nil {
		return nil
	}
	return m.streams
}

// setStreamLimit exports the bound of open event streams, so that alerts compare the open
// streams with it.
func (m *httpMetrics) setStreamLimit(n int) {
	if m != nil {
		m.streamsLimit.Set(float64(n))
	}
}

// observe records one finished request.
func (m *httpMetrics) observe(route, method string, status int, d time.Duration) {
	if m == nil {
		return
	}
	method = metricMethod(method)
	m.requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	m.duration.WithLabelValues(route, method).Observe(d.Seconds())
}

// metricMethod bounds the method label: clients may send any method token.
func metricMethod(m string) string {
	switch m {
	case "GET", "HEAD", "PUT", "PATCH", "DELETE", "POST", "OPTIONS":
		return m
	}
	return "OTHER"
}
