package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/redstate/redstate/internal/buildinfo"
)

// buildInfo is redstate_build_info{version,revision,goversion} 1: what the process was built from,
// joined onto other series by instance (the Prometheus convention for build information).
func buildInfo(info buildinfo.Info) prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "redstate_build_info",
		Help:        "Always 1; its labels say what the process was built from (version, VCS revision, Go version).",
		ConstLabels: prometheus.Labels{"version": info.Version, "revision": info.Revision, "goversion": info.GoVersion},
	})
	g.Set(1)
	return g
}
