package main

import (
	"strings"
	"testing"
)

const scrape = `# HELP metahook_driver_reconciles Reconciles.
# TYPE metahook_driver_reconciles counter
metahook_driver_reconciles_total{controller="hello",result="ok"} 3
# HELP metahook_driver_reconcile_duration_seconds Time.
# TYPE metahook_driver_reconcile_duration_seconds histogram
metahook_driver_reconcile_duration_seconds_sum{controller="hello"} 0.1
metahook_driver_reconcile_duration_seconds_count{controller="hello"} 3
metahook_driver_reconcile_duration_seconds_bucket{le="0.001",controller="hello"} 0
metahook_driver_reconcile_duration_seconds_bucket{le="+Inf",controller="hello"} 3
# HELP metahook_hook_requests_refused Refused.
# TYPE metahook_hook_requests_refused counter
# EOF
`

func exported(t *testing.T) Exported {
	t.Helper()
	e := Exported{Samples: map[string]map[string]bool{}, Empty: map[string]bool{}}
	if err := e.Add([]byte(scrape)); err != nil {
		t.Fatal(err)
	}
	return e
}

func TestTheScrapeIsReadAsPrometheusWouldQueryIt(t *testing.T) {
	e := exported(t)
	if !e.Samples["metahook_driver_reconciles_total"]["result"] {
		t.Errorf("counter sample with its labels: %v", e.Samples)
	}
	if !e.Samples["metahook_driver_reconcile_duration_seconds_bucket"]["le"] {
		t.Errorf("histogram buckets: %v", e.Samples)
	}
	if !e.Empty["metahook_hook_requests_refused_total"] {
		t.Errorf("a counter without samples is declared: %v", e.Empty)
	}
}

func TestQueriesOnExportedNamesPass(t *testing.T) {
	queries := []Query{
		{"a", `sum by (namespace, job, controller) (rate(metahook_driver_reconciles_total{result="error"}[5m]))`},
		{"b", `histogram_quantile(0.99, sum by (controller, le) (rate(metahook_driver_reconcile_duration_seconds_bucket{job="x"}[5m])))`},
		{"c", `sum by (reason) (rate(metahook_hook_requests_refused_total[5m]))`},
		{"d", `sum by (pod) (container_memory_working_set_bytes{container="metahook"})`},
	}
	problems, unchecked := Check(queries, exported(t), map[string]bool{"container_memory_working_set_bytes": true})
	if len(problems) != 0 {
		t.Errorf("problems: %v", problems)
	}
	if len(unchecked) != 1 || !strings.Contains(unchecked[0], "reason") {
		t.Errorf("the refused counter's label cannot be checked: %v", unchecked)
	}
}

func TestEachWrongNameIsNamed(t *testing.T) {
	for _, q := range []struct{ expr, want string }{
		{`rate(metahook_driver_reconcile_total[5m])`, "metric metahook_driver_reconcile_total is not exported"},
		{`sum by (hook) (rate(metahook_driver_reconciles_total[5m]))`, "label hook is on none of"},
		{`metahook_driver_reconciles_total{outcome="ok"}`, "label outcome is on none of"},
		{`rate(metahook_driver_reconciles_total[5m]`, "does not parse"},
		{`metahook_driver_reconciles_total * on (kind) metahook_driver_reconcile_duration_seconds_count`, "label kind is on none of"},
	} {
		problems, _ := Check([]Query{{"q", q.expr}}, exported(t), nil)
		if len(problems) != 1 || !strings.Contains(problems[0], q.want) {
			t.Errorf("%s: want one problem %q, got %v", q.expr, q.want, problems)
		}
	}
}

func TestTheDashboardsQueriesAndVariablesAreRead(t *testing.T) {
	dash := `{"panels": [{"title": "p", "targets": [{"expr": "rate(x_total{namespace=\"$namespace\"}[$__rate_interval])"}]}],
	  "templating": {"list": [{"name": "job", "definition": "label_values(y{namespace=\"$namespace\"}, job)"}]}}`
	queries, err := DashboardQueries([]byte(dash))
	if err != nil {
		t.Fatal(err)
	}
	if len(queries) != 2 || queries[0].Expr != `rate(x_total{namespace="default"}[5m])` ||
		queries[1].Expr != `count by (job) (y{namespace="default"})` {
		t.Errorf("queries: %+v", queries)
	}
}
