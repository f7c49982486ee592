package httpapi

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/history"
)

// statsLabelPrefix starts a label filter's query parameter: label.queue=report:queue.
const statsLabelPrefix = "label."

// statsRoutes registers the statistics history's routes (the dashboard's charts).
func (s *server) statsRoutes() {
	s.handle("GET /v1/stats/series", roleRead, s.statsSeries)
	s.handle("GET /v1/stats/metrics", roleRead, s.statsMetrics)
}

// statsSeries answers the series of ?metric=...&window=...&label.<name>=<value>[&since=<unix>]
// (history.Result).
func (s *server) statsSeries(w http.ResponseWriter, r *http.Request) error {
	if s.history == nil {
		return redstate.Errorf(redstate.ENOTFOUND, "this server keeps no statistics history")
	}
	values := r.URL.Query()
	q := history.Query{Metrics: values["metric"], Window: values.Get("window")}
	if q.Window == "" {
		q.Window = "15m"
	}
	if since := values.Get("since"); since != "" {
		n, err := strconv.ParseInt(since, 10, 64)
		if err != nil || n < 0 {
			return redstate.Errorf(redstate.EINVALID, "since must be a Unix time in seconds, got %q", since)
		}
		q.Since = n
	}
	for name, vs := range values {
		label, ok := strings.CutPrefix(name, statsLabelPrefix)
		if !ok {
			continue
		}
		if len(vs) != 1 || vs[0] == "" {
			return redstate.Errorf(redstate.EINVALID, "%s takes exactly one non-empty value", name)
		}
		if q.Labels == nil {
			q.Labels = map[string]string{}
		}
		q.Labels[label] = vs[0]
	}
	res, err := s.history.Read(r.Context(), q)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

// statsCatalog is the answer of GET /v1/stats/metrics.
type statsCatalog struct {
	// Metrics are every metric the history answers, with the label sets seen in the last day.
	Metrics []history.MetricInfo `json:"metrics"`
	// Windows are the windows a series read takes, with their steps.
	Windows []statsWindow `json:"windows"`
}

// statsWindow is one window of GET /v1/stats/series.
type statsWindow struct {
	Window string `json:"window"`
	Step   string `json:"step"`
	Points int    `json:"points"`
}

// statsMetrics lists the metrics, their units, kinds and the label sets seen.
func (s *server) statsMetrics(w http.ResponseWriter, r *http.Request) error {
	if s.history == nil {
		return redstate.Errorf(redstate.ENOTFOUND, "this server keeps no statistics history")
	}
	ms, err := s.history.Catalog(r.Context())
	if err != nil {
		return err
	}
	out := statsCatalog{Metrics: ms}
	for _, t := range history.Tiers {
		out.Windows = append(out.Windows, statsWindow{Window: t.Window, Step: t.StepString(), Points: t.Points})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
