package deploy

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"
)

// monitoringDir is the monitoring kit, relative to the repository's top directory.
const monitoringDir = "deploy/monitoring"

// rule is one recording or alerting rule of the kit.
type rule struct {
	Record string `yaml:"record"`
	Alert  string `yaml:"alert"`
	Expr   string `yaml:"expr"`
	File   string `yaml:"-"`
}

// kitRules returns every rule of deploy/monitoring/*.rules.yml.
func kitRules(t *testing.T) []rule {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot(t), monitoringDir, "*.rules.yml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no rule files in %s: %v", monitoringDir, err)
	}
	var rules []rule
	for _, f := range files {
		var doc struct {
			Groups []struct {
				Rules []rule `yaml:"rules"`
			} `yaml:"groups"`
		}
		if err := yaml.Unmarshal(readFile(t, filepath.Join(monitoringDir, filepath.Base(f))), &doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, g := range doc.Groups {
			for _, r := range g.Rules {
				r.File = filepath.Base(f)
				rules = append(rules, r)
			}
		}
	}
	return rules
}

// dashboard is the subset of the Grafana dashboard model the tests read.
type dashboard struct {
	Title      string `json:"title"`
	UID        string `json:"uid"`
	Templating struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Query      json.RawMessage `json:"query"`
			Definition string          `json:"definition"`
			Datasource *datasourceRef  `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		Type       string         `json:"type"`
		Title      string         `json:"title"`
		Datasource *datasourceRef `json:"datasource"`
		GridPos    struct{ H, W, X, Y int }
		Targets    []struct {
			Expr       string         `json:"expr"`
			Datasource *datasourceRef `json:"datasource"`
		} `json:"targets"`
	} `json:"panels"`
}

type datasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

func kitDashboard(t *testing.T) dashboard {
	t.Helper()
	var d dashboard
	if err := json.Unmarshal(readFile(t, monitoringDir+"/grafana-dashboard.json"), &d); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	return d
}

// grafanaVariable is a Grafana variable that stands for a duration in an expression
// ($__rate_interval, $__interval, $__range).
var grafanaVariable = regexp.MustCompile(`\$__\w+`)

// labelValuesMetric is the metric of a Grafana label_values(metric{...}, label) query.
var labelValuesMetric = regexp.MustCompile(`label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)`)

// kitExpression is one PromQL expression of the kit and where it stands.
type kitExpression struct {
	Where, Expr string
}

// kitExpressions returns every PromQL expression of the rules and the dashboard (Grafana's
// duration variables replaced by 5m; $job and $instance stand in label matchers' strings).
func kitExpressions(t *testing.T) []kitExpression {
	t.Helper()
	var out []kitExpression
	for _, r := range kitRules(t) {
		out = append(out, kitExpression{r.File + " " + r.Record + r.Alert, r.Expr})
	}
	d := kitDashboard(t)
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			out = append(out, kitExpression{"dashboard panel " + p.Title, grafanaVariable.ReplaceAllString(tg.Expr, "5m")})
		}
	}
	for _, v := range d.Templating.List {
		if m := labelValuesMetric.FindStringSubmatch(v.Definition); m != nil {
			out = append(out, kitExpression{"dashboard variable " + v.Name, m[1]})
		}
	}
	return out
}

// metricNames returns the metric names an expression selects, parsed with Prometheus's own
// PromQL parser (so functions, keywords, label names and strings are never taken for metrics).
func metricNames(expr string) ([]string, error) {
	e, err := parser.ParseExpr(expr)
	if err != nil {
		return nil, err
	}
	var names []string
	var problem error
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		for _, m := range vs.LabelMatchers {
			if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
				name = m.Value
			}
		}
		if name == "" {
			problem = fmt.Errorf("selector %s names no metric", vs)
		}
		names = append(names, name)
		return nil
	})
	return names, problem
}

// TestRules_Promtool runs promtool check rules on every rule file and promtool test rules on
// every unit test of deploy/monitoring/tests.
func TestRules_Promtool(t *testing.T) {
	promtool := requireTool(t, "promtool", "scripts/ensure-promtool.sh")
	dir := filepath.Join(repoRoot(t), monitoringDir)
	rules, _ := filepath.Glob(filepath.Join(dir, "*.rules.yml"))
	tests, _ := filepath.Glob(filepath.Join(dir, "tests", "*.yml"))
	if len(rules) == 0 || len(tests) == 0 {
		t.Fatalf("rules %v tests %v", rules, tests)
	}
	if out, err := exec.Command(promtool, append([]string{"check", "rules"}, rules...)...).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	cmd := exec.Command(promtool, append([]string{"test", "rules"}, tests...)...)
	cmd.Dir = filepath.Join(dir, "tests")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
}

// TestRules_EveryAlertTestedFiringAndQuiet: each alert has a unit test where it fires and one
// where it does not, and the rules' expressions parse.
func TestRules_EveryAlertTestedFiringAndQuiet(t *testing.T) {
	firing, quiet := map[string]bool{}, map[string]bool{}
	tests, _ := filepath.Glob(filepath.Join(repoRoot(t), monitoringDir, "tests", "*.yml"))
	for _, f := range tests {
		var doc struct {
			Tests []struct {
				AlertRuleTest []struct {
					Alertname string `yaml:"alertname"`
					ExpAlerts []any  `yaml:"exp_alerts"`
				} `yaml:"alert_rule_test"`
			} `yaml:"tests"`
		}
		if err := yaml.Unmarshal(readFile(t, filepath.Join(monitoringDir, "tests", filepath.Base(f))), &doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, tc := range doc.Tests {
			for _, a := range tc.AlertRuleTest {
				if len(a.ExpAlerts) > 0 {
					firing[a.Alertname] = true
				} else {
					quiet[a.Alertname] = true
				}
			}
		}
	}
	alerts := 0
	for _, r := range kitRules(t) {
		if _, err := parser.ParseExpr(r.Expr); err != nil {
			t.Errorf("%s %s%s: %v", r.File, r.Record, r.Alert, err)
		}
		if r.Alert == "" {
			continue
		}
		alerts++
		if !firing[r.Alert] || !quiet[r.Alert] {
			t.Errorf("alert %s: tested firing %v, not firing %v; want both", r.Alert, firing[r.Alert], quiet[r.Alert])
		}
	}
	if alerts < 10 {
		t.Errorf("only %d alerts", alerts)
	}
}

// TestDashboard_Structure: the dashboard has a row per block, picks its data source and
// instances through variables that every panel uses, lays no panel over another, and every
// expression parses.
func TestDashboard_Structure(t *testing.T) {
	d := kitDashboard(t)
	if d.UID == "" || d.Title == "" {
		t.Errorf("uid %q title %q", d.UID, d.Title)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
		if v.Type == "datasource" && string(v.Query) != `"prometheus"` {
			t.Errorf("datasource variable queries %s, want prometheus", v.Query)
		}
	}
	if vars["datasource"] != "datasource" || vars["instance"] != "query" || vars["job"] != "query" {
		t.Fatalf("variables %v: want datasource (datasource), job and instance (query)", vars)
	}
	var rows []string
	for i, p := range d.Panels {
		if p.Type == "row" {
			rows = append(rows, p.Title)
		} else {
			if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q does not use the datasource variable: %+v", p.Title, p.Datasource)
			}
			if len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			for _, tg := range p.Targets {
				if !strings.Contains(tg.Expr, `instance=~"$instance"`) && !strings.HasPrefix(p.Title, "Instances up") {
					t.Errorf("panel %q query %q ignores the instance variable", p.Title, tg.Expr)
				}
				if _, err := parser.ParseExpr(grafanaVariable.ReplaceAllString(tg.Expr, "5m")); err != nil {
					t.Errorf("panel %q query %q: %v", p.Title, tg.Expr, err)
				}
			}
		}
		for _, q := range d.Panels[i+1:] {
			a, b := p.GridPos, q.GridPos
			if a.X < b.X+b.W && b.X < a.X+a.W && a.Y < b.Y+b.H && b.Y < a.Y+a.H {
				t.Errorf("panels %q and %q overlap", p.Title, q.Title)
			}
		}
	}
	for _, block := range []string{"Build status", "Queue / report", "Executor", "Index", "Feed", "HTTP", "Redis / client cache"} {
		if !slices.ContainsFunc(rows, func(r string) bool { return strings.HasPrefix(r, block) }) {
			t.Errorf("no row for %s: rows %v", block, rows)
		}
	}
}

// TestMetricNames_Parser: names come from selectors only, whatever functions, keywords,
// labels and strings surround them.
func TestMetricNames_Parser(t *testing.T) {
	names, err := metricNames(`sum by (job, le) (rate(a_total{code="sum", le="rate"}[5m])) / on (job) group_left max(b) and {__name__="c"} unless absent(d offset 5m) or vector(0)`)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names, []string{"a_total", "b", "c", "d"}) {
		t.Errorf("names = %v", names)
	}
	if _, err := metricNames(`{job="x"}`); err == nil {
		t.Error("a selector without a name was accepted")
	}
}
