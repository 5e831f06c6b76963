"""The monitoring the chart ships, rendered by real Helm: traces (the OTEL_*
variables, the collector let through the NetworkPolicy), the alerts of
chart/monitoring/alerts.yaml as a PrometheusRule that promtool (built from
Prometheus' Go module by tests/monitoring/build.sh) accepts as rendered, a
runbook section for each alert, the Grafana dashboard as a ConfigMap for the
sidecar, and the ServiceMonitor copying the shard label the alerts group by.
The rules' behaviour is tests/monitoring/alerts_test.yaml (promtool test
rules); the names they use against live /metrics, the e2e test monitoring::.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import helm_python
import pytest
import yaml

from conftest import CHART, DEFAULT_NAMESPACE, ROOT, Rendered, render

ALERTS = CHART / "monitoring" / "alerts.yaml"
DASHBOARD = CHART / "monitoring" / "dashboard.json"
RUNBOOK = ROOT / "docs" / "runbook.md"
SHARD_LABEL = "metahook.dev/shard"


@pytest.fixture(scope="module")
def promtool() -> Path:
    done = subprocess.run([str(ROOT / "tests" / "monitoring" / "build.sh")],
                          capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, f"building promtool:\n{done.stderr[-4000:]}"
    tool = Path(done.stdout.strip()) / "promtool"
    assert tool.is_file(), tool
    return tool


def dashboard_of(out: Rendered) -> dict:
    [config_map] = [o for o in out.all("ConfigMap") if o["metadata"]["name"].endswith("-dashboard")]
    return config_map


def test_alerts_and_dashboard_are_off_by_default(default: Rendered) -> None:
    assert not default.all("PrometheusRule")
    assert not [o for o in default.all("ConfigMap") if o["metadata"]["name"].endswith("-dashboard")]


def test_the_prometheus_rule_is_the_rule_file_and_promtool_accepts_it_as_rendered(
        chart: helm_python.Chart, promtool: Path, tmp_path: Path) -> None:
    out = render(chart, {"metrics": {"prometheusRule": {"enabled": True, "labels": {"release": "prometheus"}}},
                         "commonAnnotations": {"example.com/owner": "platform"}})
    rule = out.one("PrometheusRule")
    assert rule["metadata"]["namespace"] == DEFAULT_NAMESPACE
    assert rule["metadata"]["labels"]["release"] == "prometheus"
    assert rule["metadata"]["labels"]["app.kubernetes.io/instance"] == out.release
    assert rule["metadata"]["annotations"] == {"example.com/owner": "platform"}
    assert rule["spec"] == yaml.safe_load(ALERTS.read_text())
    rendered = tmp_path / "rendered-rules.yaml"
    rendered.write_text(yaml.safe_dump(rule["spec"]))
    done = subprocess.run([str(promtool), "check", "rules", str(rendered)], capture_output=True, text=True)
    count = sum(len(g["rules"]) for g in rule["spec"]["groups"])
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {count} rules found" in done.stdout, done.stdout


def test_promtool_refuses_a_broken_rule(promtool: Path, tmp_path: Path) -> None:
    # The check above can fail: a rule that does not parse is refused.
    spec = yaml.safe_load(ALERTS.read_text())
    spec["groups"][0]["rules"][0]["expr"] = "sum by (controller) (rate(metahook_driver_reconciles_total[5m]"
    broken = tmp_path / "broken.yaml"
    broken.write_text(yaml.safe_dump(spec))
    done = subprocess.run([str(promtool), "check", "rules", str(broken)], capture_output=True, text=True)
    assert done.returncode != 0


def test_every_alert_says_how_bad_what_and_where_to_look() -> None:
    runbook = RUNBOOK.read_text()
    headings = {line[3:].strip() for line in runbook.splitlines() if line.startswith("## ")}
    rules = [r for g in yaml.safe_load(ALERTS.read_text())["groups"] for r in g["rules"]]
    assert len(rules) >= 10
    for rule in rules:
        name = rule["alert"]
        assert re.fullmatch(r"Metahook[A-Z][A-Za-z]+", name), name
        assert rule["labels"]["severity"] in {"critical", "warning", "info"}, name
        annotations = rule["annotations"]
        assert annotations["summary"] and annotations["description"], name
        assert annotations["runbook_url"].endswith(f"/docs/runbook.md#{name.lower()}"), name
        assert name in headings, f"docs/runbook.md has no section ## {name}"
        # Grouped by release, so that two operators' alerts stay apart.
        assert re.search(r"by \([^)]*namespace, job", rule["expr"]), name
    assert headings >= {r["alert"] for r in rules}


def test_the_dashboard_is_a_config_map_the_grafana_sidecar_loads(chart: helm_python.Chart) -> None:
    out = render(chart, {"metrics": {"grafanaDashboard": {"enabled": True,
                                                          "annotations": {"grafana_folder": "Operators"}}},
                         "commonAnnotations": {"example.com/owner": "platform"}})
    config_map = dashboard_of(out)
    assert config_map["metadata"]["namespace"] == DEFAULT_NAMESPACE
    assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert config_map["metadata"]["annotations"] == {"grafana_folder": "Operators",
                                                      "example.com/owner": "platform"}
    [(key, text)] = config_map["data"].items()
    assert key == f"{out.release}.json"
    dashboard = json.loads(text)
    assert dashboard == json.loads(DASHBOARD.read_text())
    elsewhere = render(chart, {"metrics": {"grafanaDashboard": {
        "enabled": True, "namespace": "monitoring", "labels": {"dashboards": "ops"}}}})
    moved = dashboard_of(elsewhere)
    assert moved["metadata"]["namespace"] == "monitoring"
    assert moved["metadata"]["labels"]["dashboards"] == "ops"


def test_every_dashboard_panel_queries_the_chosen_release() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    variables = {v["name"] for v in dashboard["templating"]["list"]}
    assert variables == {"datasource", "namespace", "job"}
    panels = [p for p in dashboard["panels"] if p["type"] != "row"]
    titles = [p["title"] for p in panels]
    assert len(set(titles)) == len(titles)
    for panel in panels:
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert 'namespace="$namespace"' in target["expr"], (panel["title"], target["expr"])
            assert "$job" in target["expr"], (panel["title"], target["expr"])
    # Nothing overlaps on the grid.
    cells = set()
    for panel in dashboard["panels"]:
        g = panel["gridPos"]
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                assert (x, y) not in cells, panel["title"]
                cells.add((x, y))


def test_the_service_monitor_copies_the_shard_label_the_alerts_group_by(chart: helm_python.Chart) -> None:
    out = render(chart, {"mode": "driver", "metrics": {"serviceMonitor": {"enabled": True}},
                         "driver": {"shards": [{"name": "a", "selector": "tier in (a)"},
                                               {"name": "b", "selector": "tier in (b)"}]}})
    monitor = out.one("ServiceMonitor")
    assert monitor["spec"]["podTargetLabels"] == [SHARD_LABEL]
    shards = {d["spec"]["template"]["metadata"]["labels"].get(SHARD_LABEL) for d in out.all("Deployment")}
    assert shards == {"a", "b"}
    # Prometheus turns the label's name into the one the rules use.
    assert re.sub(r"[^a-zA-Z0-9_]", "_", SHARD_LABEL) in ALERTS.read_text()


def test_traces_are_off_unless_an_endpoint_is_given(default: Rendered, chart: helm_python.Chart) -> None:
    assert not [name for name in default.env() if name.startswith("OTEL_")]
    for mode in ("metacontroller", "driver"):
        out = render(chart, {"mode": mode, "tracing": {"otlpEndpoint": "http://otel.monitoring:4318"}})
        for deployment in out.all("Deployment"):
            [container] = deployment["spec"]["template"]["spec"]["containers"]
            env = {e["name"]: e.get("value") for e in container["env"]}
            assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://otel.monitoring:4318", mode
            assert env["OTEL_SERVICE_NAME"] == out.release, mode
    named = render(chart, {"tracing": {"otlpEndpoint": "http://otel:4318", "serviceName": "hooks"}})
    assert named.env()["OTEL_SERVICE_NAME"] == "hooks"


def test_a_traced_hook_service_may_reach_its_collector_and_nothing_else(chart: helm_python.Chart) -> None:
    closed = render(chart, {"tracing": {"otlpEndpoint": "http://otel.monitoring:4318"}})
    assert closed.one("NetworkPolicy")["spec"]["egress"] == []
    rule = {"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}],
            "ports": [{"port": 4318, "protocol": "TCP"}]}
    opened = render(chart, {"tracing": {"otlpEndpoint": "http://otel.monitoring:4318", "egress": [rule]}})
    spec = opened.one("NetworkPolicy")["spec"]
    assert "Egress" in spec["policyTypes"]
    assert spec["egress"] == [rule]


@pytest.mark.parametrize("endpoint", ["otel:4318", "ftp://otel:4318", "http://otel :4318"])
def test_an_endpoint_that_is_not_a_url_is_refused(chart: helm_python.Chart, endpoint: str) -> None:
    with pytest.raises(helm_python.HelmError, match="otlpEndpoint"):
        render(chart, {"tracing": {"otlpEndpoint": endpoint}})
