// Command metricnames checks that every metric and label named by the
// chart's alerts (a Prometheus rule file) and its Grafana dashboard is one
// that metahook exports, as read from live /metrics scrapes (OpenMetrics
// text, as metahook serves it). Every query is parsed with Prometheus' own
// PromQL parser, so a query that does not parse fails here too.
//
//	metricnames -rules alerts.yaml -dashboard dashboard.json [-external name,...] scrape.txt...
//	metricnames -rules alerts.yaml -dashboard dashboard.json -parse-only
//
// Labels Prometheus adds when it scrapes (namespace, job, pod, the shard's
// pod label, ...) are not the binary's to export and are accepted; metrics
// named in -external come from other exporters (cAdvisor,
// kube-state-metrics) and are not checked. Exits 1 naming every problem.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"
)

// targetLabels are added by Prometheus (the Prometheus Operator's
// ServiceMonitor and the chart's podTargetLabels), not exported by metahook.
var targetLabels = map[string]bool{
	"namespace": true, "job": true, "pod": true, "instance": true, "service": true,
	"endpoint": true, "container": true, "metahook_dev_shard": true,
}

// Exported is what the scrapes hold: each sample name with the label names
// seen on it, and the families declared without a sample (their labels
// unknown).
type Exported struct {
	Samples map[string]map[string]bool
	Empty   map[string]bool
}

// Query is one PromQL expression and where it comes from.
type Query struct {
	Where string
	Expr  string
}

func main() {
	rules := flag.String("rules", "", "a Prometheus rule file")
	dashboard := flag.String("dashboard", "", "a Grafana dashboard (JSON)")
	external := flag.String("external", "", "metrics from other exporters, comma-separated")
	parseOnly := flag.Bool("parse-only", false, "only parse every query")
	flag.Parse()
	if *rules == "" || *dashboard == "" || (flag.NArg() == 0) != *parseOnly {
		fmt.Fprintln(os.Stderr, "usage: metricnames -rules FILE -dashboard FILE (-parse-only | [-external a,b] SCRAPE...)")
		os.Exit(2)
	}
	exported := Exported{Samples: map[string]map[string]bool{}, Empty: map[string]bool{}}
	for _, path := range flag.Args() {
		text, err := os.ReadFile(path)
		if err == nil {
			err = exported.Add(text)
		}
		if err != nil {
			fail(fmt.Errorf("%s: %w", path, err))
		}
	}
	var queries []Query
	for _, load := range []struct {
		path string
		read func([]byte) ([]Query, error)
	}{{*rules, RuleQueries}, {*dashboard, DashboardQueries}} {
		text, err := os.ReadFile(load.path)
		if err != nil {
			fail(err)
		}
		found, err := load.read(text)
		if err != nil {
			fail(fmt.Errorf("%s: %w", load.path, err))
		}
		queries = append(queries, found...)
	}
	ext := map[string]bool{}
	for _, name := range strings.Split(*external, ",") {
		if name != "" {
			ext[name] = true
		}
	}
	if *parseOnly {
		problems := Parse(queries)
		for _, p := range problems {
			fmt.Println("PROBLEM:", p)
		}
		fmt.Printf("%d queries, %d do not parse\n", len(queries), len(problems))
		if len(problems) > 0 {
			os.Exit(1)
		}
		return
	}
	problems, unchecked := Check(queries, exported, ext)
	for _, u := range unchecked {
		fmt.Println("labels not checked (no sample):", u)
	}
	for _, p := range problems {
		fmt.Println("PROBLEM:", p)
	}
	fmt.Printf("%d queries, %d sample names exported, %d problems\n", len(queries), len(exported.Samples), len(problems))
	if len(problems) > 0 {
		os.Exit(1)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "metricnames:", err)
	os.Exit(2)
}

// Add reads one scrape in OpenMetrics text.
func (e *Exported) Add(text []byte) error {
	p := textparse.NewOpenMetricsParser(text, labels.NewSymbolTable())
	declared := map[string]string{}
	for {
		entry, err := p.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		switch entry {
		case textparse.EntryType:
			name, typ := p.Type()
			declared[string(name)] = string(typ)
		case textparse.EntrySeries, textparse.EntryHistogram:
			var ls labels.Labels
			p.Labels(&ls)
			name := ls.Get(labels.MetricName)
			seen := e.Samples[name]
			if seen == nil {
				seen = map[string]bool{}
				e.Samples[name] = seen
			}
			ls.Range(func(l labels.Label) {
				if l.Name != labels.MetricName {
					seen[l.Name] = true
				}
			})
		}
	}
	for family, typ := range declared {
		for _, name := range sampleNames(family, typ) {
			if _, ok := e.Samples[name]; !ok {
				e.Empty[name] = true
			}
		}
	}
	return nil
}

// sampleNames are the names a family's samples carry.
func sampleNames(family, typ string) []string {
	switch typ {
	case "counter":
		return []string{family + "_total"}
	case "histogram":
		return []string{family + "_bucket", family + "_sum", family + "_count"}
	default:
		return []string{family}
	}
}

// RuleQueries reads every expr of a Prometheus rule file.
func RuleQueries(text []byte) ([]Query, error) {
	var file struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Alert  string `yaml:"alert"`
				Record string `yaml:"record"`
				Expr   string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(text, &file); err != nil {
		return nil, err
	}
	var out []Query
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			out = append(out, Query{Where: "rule " + r.Alert + r.Record, Expr: r.Expr})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no rules")
	}
	return out, nil
}

// grafanaVariables stand in for what Grafana substitutes before a query
// reaches Prometheus.
var grafanaVariables = strings.NewReplacer(
	"$__rate_interval", "5m",
	"$__interval", "1m",
	"$namespace", "default",
	"$job", "metahook",
)

// DashboardQueries reads every panel's targets (and the variables'
// label_values queries' selectors) of a Grafana dashboard.
func DashboardQueries(text []byte) ([]Query, error) {
	type panel struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
		Panels []json.RawMessage `json:"panels"`
	}
	var dash struct {
		Panels     []panel `json:"panels"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(text, &dash); err != nil {
		return nil, err
	}
	var out []Query
	for _, p := range dash.Panels {
		for _, t := range p.Targets {
			out = append(out, Query{Where: "panel " + p.Title, Expr: grafanaVariables.Replace(t.Expr)})
		}
	}
	for _, v := range dash.Templating.List {
		// label_values(SELECTOR, label): the selector is PromQL.
		def := strings.TrimSpace(v.Definition)
		if !strings.HasPrefix(def, "label_values(") {
			continue
		}
		inner := strings.TrimSuffix(strings.TrimPrefix(def, "label_values("), ")")
		comma := strings.LastIndex(inner, ",")
		if comma < 0 {
			return nil, fmt.Errorf("variable %s: %q", v.Name, def)
		}
		selector := grafanaVariables.Replace(strings.TrimSpace(inner[:comma]))
		label := strings.TrimSpace(inner[comma+1:])
		out = append(out, Query{
			Where: "variable " + v.Name,
			Expr:  fmt.Sprintf("count by (%s) (%s)", label, selector),
		})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no queries")
	}
	return out, nil
}

// Parse names each query that does not parse.
func Parse(queries []Query) (problems []string) {
	pql := parser.NewParser(parser.Options{})
	for _, q := range queries {
		if _, err := pql.ParseExpr(q.Expr); err != nil {
			problems = append(problems, fmt.Sprintf("%s: does not parse: %v", q.Where, err))
		}
	}
	return problems
}

// Check parses every query and names each metric or label it uses that the
// scrapes do not show; it also names the labels it could not check.
func Check(queries []Query, exported Exported, external map[string]bool) (problems, unchecked []string) {
	pql := parser.NewParser(parser.Options{})
	seenUnchecked := map[string]bool{}
	for _, q := range queries {
		expr, err := pql.ParseExpr(q.Expr)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: does not parse: %v", q.Where, err))
			continue
		}
		parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
			var names []string
			var used []string
			switch n := node.(type) {
			case *parser.VectorSelector:
				names = []string{n.Name}
				for _, m := range n.LabelMatchers {
					if m.Name != labels.MetricName {
						used = append(used, m.Name)
					}
				}
			case *parser.AggregateExpr:
				names = selectedNames(n.Expr)
				used = n.Grouping
			case *parser.BinaryExpr:
				if n.VectorMatching != nil {
					names = append(selectedNames(n.LHS), selectedNames(n.RHS)...)
					used = append(append(used, n.VectorMatching.MatchingLabels...), n.VectorMatching.Include...)
				}
			default:
				return nil
			}
			if v, ok := node.(*parser.VectorSelector); ok {
				_, sampled := exported.Samples[v.Name]
				if !sampled && !exported.Empty[v.Name] && !external[v.Name] {
					problems = append(problems, fmt.Sprintf("%s: metric %s is not exported", q.Where, v.Name))
				}
			}
			for _, label := range used {
				if targetLabels[label] || label == "le" && anySuffix(names, "_bucket") {
					continue
				}
				if !hasLabel(names, label, exported, external) {
					if key := strings.Join(names, ",") + " " + label; unknownOnly(names, exported, external) {
						if !seenUnchecked[key] {
							seenUnchecked[key] = true
							unchecked = append(unchecked, key)
						}
						continue
					}
					problems = append(problems, fmt.Sprintf("%s: label %s is on none of %v", q.Where, label, names))
				}
			}
			return nil
		})
	}
	sort.Strings(unchecked)
	return problems, unchecked
}

// selectedNames are the metric names an expression selects.
func selectedNames(expr parser.Node) []string {
	var names []string
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		if v, ok := node.(*parser.VectorSelector); ok {
			names = append(names, v.Name)
		}
		return nil
	})
	return names
}

func anySuffix(names []string, suffix string) bool {
	for _, n := range names {
		if strings.HasSuffix(n, suffix) {
			return true
		}
	}
	return false
}

// hasLabel: some metric among names carries label (an external metric is
// taken at its word).
func hasLabel(names []string, label string, exported Exported, external map[string]bool) bool {
	for _, n := range names {
		if external[n] || exported.Samples[n][label] {
			return true
		}
	}
	return false
}

// unknownOnly: every metric among names is declared but has no sample, so
// its labels cannot be known from a scrape.
func unknownOnly(names []string, exported Exported, external map[string]bool) bool {
	if len(names) == 0 {
		return false
	}
	for _, n := range names {
		if _, sampled := exported.Samples[n]; sampled || external[n] || !exported.Empty[n] {
			return false
		}
	}
	return true
}
