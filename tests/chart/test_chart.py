"""The Helm chart in chart/, rendered and linted with real Helm
(helm-python-sdk, Helm v4) and validated with kubernetes-validate.

Run with tests/chart/run.sh (a venv with the pinned tools, scripts/lib/venv.sh).
"""

from __future__ import annotations

import base64
import copy
import re
import shutil
import subprocess
import tarfile
import warnings
from datetime import datetime
from pathlib import Path

import helm_python
import pytest
import yaml

from conftest import (
    CHART,
    CHART_NAME,
    CUSTOM_SCHEMAS,
    CONTROLLERS,
    DEFAULT_NAMESPACE,
    DEFAULT_RELEASE,
    KUBE_VERSIONS,
    ROOT,
    Rendered,
    chart_metadata,
    controller_manifests,
    conversion_files,
    crd_files,
    crds_by_group_kind,
    custom_resource_schema,
    expected_labels,
    kube_floor,
    load_yaml_documents,
    load_yaml_file,
    only,
    render,
    restricted_violations,
    schema_errors,
    validation_errors,
)

CLUSTER_SCOPED = {"APIService", "ClusterRole", "ClusterRoleBinding", "CompositeController",
                  "CustomResourceDefinition", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")

# Values that turn on everything optional, with non-default values for every
# knob the templates pass through.
EVERYTHING = {
    "image": {"repository": "registry.example.com/platform/metahook", "tag": "1.2.3", "pullPolicy": "Always"},
    "imagePullSecrets": [{"name": "regcred"}],
    "replicas": 3,
    "server": {"port": 9090, "maxBodyBytes": 1048576, "maxBufferedBytes": 8388608, "maxInFlight": 64,
               "requestTimeoutSeconds": 5,
               "shutdownTimeoutSeconds": 20, "workers": 2, "logFormat": "text"},
    "service": {"port": 8081, "annotations": {"example.com/service": "yes"}},
    "serviceAccount": {"annotations": {"example.com/sa": "yes"}},
    "podDisruptionBudget": {"minAvailable": "50%"},
    "networkPolicy": {"metacontrollerNamespace": "mc-system",
                      "metacontrollerPodSelector": {"matchLabels": {"app.kubernetes.io/name": "metacontroller"}},
                      "metricsFrom": [{"namespaceSelector": {"matchLabels": {"team": "observability"}}}]},
    "metrics": {"serviceMonitor": {"enabled": True, "interval": "15s", "scrapeTimeout": "5s",
                                   "labels": {"release": "prometheus"},
                                   "relabelings": [{"action": "replace", "targetLabel": "team", "replacement": "platform"}],
                                   "metricRelabelings": [{"action": "drop", "sourceLabels": ["__name__"], "regex": "go_.*"}]},
                "prometheusRule": {"enabled": True, "labels": {"release": "prometheus"}},
                "grafanaDashboard": {"enabled": True, "annotations": {"grafana_folder": "Operators"}}},
    "commonLabels": {"example.com/team": "platform"},
    "commonAnnotations": {"example.com/owner": "platform@example.com"},
    "podLabels": {"example.com/pod": "yes"},
    "podAnnotations": {"example.com/scrape": "true"},
    "extraArgs": ["--log-format=text"],
    "extraEnv": [{"name": "RUST_LOG", "value": "debug"}],
    "priorityClassName": "system-cluster-critical",
    "nodeSelector": {"kubernetes.io/os": "linux"},
    "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "platform", "effect": "NoSchedule"}],
    "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"]}]}]}}},
    "lifecycle": {"preStopSleepSeconds": 3},
    "terminationGracePeriodSeconds": 60,
    "probes": {"liveness": {"periodSeconds": 20}, "readiness": {"periodSeconds": 3, "successThreshold": 1}},
}


def aggregated_api(values: dict | None = None, mode: str = "driver", **settings: object) -> dict:
    """Values turning on the driver's aggregated API (driver.aggregatedApi),
    with `settings` for it, on top of `values`."""
    out = copy.deepcopy(values or {})
    out["mode"] = mode
    driver = out.setdefault("driver", {})
    driver["aggregatedApi"] = {"enabled": True, **driver.get("aggregatedApi", {}), **settings}
    return out


CERT_MANAGER = {"enabled": True}

# OpenShift-style: the platform picks uid/gid, so the chart must not pin them.
UNPINNED_IDS = {
    "podSecurityContext": {"runAsUser": None, "runAsGroup": None, "fsGroup": None},
    "securityContext": {"runAsUser": None, "runAsGroup": None},
}

# Every combination the chart is rendered in: (id, values, release, namespace).
SCENARIOS = [
    ("default", {}, DEFAULT_RELEASE, DEFAULT_NAMESPACE),
    ("driver", {"mode": "driver"}, DEFAULT_RELEASE, DEFAULT_NAMESPACE),
    *[(f"only-{c}", only(c), DEFAULT_RELEASE, DEFAULT_NAMESPACE) for c in CONTROLLERS],
    *[(f"driver-only-{c}", only(c, mode="driver"), DEFAULT_RELEASE, DEFAULT_NAMESPACE) for c in CONTROLLERS],
    ("custom-release", {}, "hooks-prod", "platform-hooks"),
    ("driver-custom-release", {"mode": "driver"}, "hooks-prod", "platform-hooks"),
    ("name-overrides", {"nameOverride": "hookd", "fullnameOverride": "my-hooks", "namespaceOverride": "elsewhere"},
     DEFAULT_RELEASE, DEFAULT_NAMESPACE),
    ("long-release-name", {"mode": "driver"}, "a" * 53, DEFAULT_NAMESPACE),
    ("hardening-overridden", {
        "podSecurityContext": {"runAsUser": 1000, "runAsGroup": 1000, "fsGroup": 1000},
        "securityContext": {"runAsUser": 1000, "runAsGroup": 1000, "readOnlyRootFilesystem": False},
    }, DEFAULT_RELEASE, DEFAULT_NAMESPACE),
    ("hardening-unpinned-ids", UNPINNED_IDS, DEFAULT_RELEASE, DEFAULT_NAMESPACE),
    ("everything", EVERYTHING, DEFAULT_RELEASE, DEFAULT_NAMESPACE),
    ("driver-everything", {**EVERYTHING, "mode": "driver",
                           "rbac": {"create": True, "extraClusterRoleRules": [
                               {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}]},
                           "driver": {"leaseName": "metahook-leader", "aggregatedApi": {
                               "enabled": True, "port": 9443, "servicePort": 8443, "groupPriorityMinimum": 2000,
                               "versionPriority": 20, "aggregateToView": False, "certValidityDays": 365}}},
     DEFAULT_RELEASE, DEFAULT_NAMESPACE),
    ("driver-shards", {"mode": "driver", "driver": {"shards": [
        {"name": "a", "selector": "metahook.dev/shard=a"},
        {"name": "rest", "selector": "metahook.dev/shard notin (a)"}]}}, DEFAULT_RELEASE, DEFAULT_NAMESPACE),
    ("driver-aggregated-api", aggregated_api(), DEFAULT_RELEASE, DEFAULT_NAMESPACE),
    ("driver-aggregated-api-custom-release", aggregated_api(), "hooks-prod", "platform-hooks"),
    ("driver-aggregated-api-cert-manager", aggregated_api(certManager=CERT_MANAGER), DEFAULT_RELEASE,
     DEFAULT_NAMESPACE),
    ("driver-aggregated-api-cluster-issuer", aggregated_api(
        certManager={"enabled": True, "issuerRef": {"name": "platform-ca", "kind": "ClusterIssuer"},
                     "duration": "720h"}), DEFAULT_RELEASE, DEFAULT_NAMESPACE),
    ("driver-aggregated-api-long-release-name", aggregated_api(certManager=CERT_MANAGER), "a" * 53,
     DEFAULT_NAMESPACE),
    ("driver-aggregated-api-minimal", aggregated_api(
        {"serviceAccount": {"create": False, "name": "existing"}, "rbac": {"create": False},
         "networkPolicy": {"enabled": False}, "podSecurityContext": {"fsGroup": None}},
        insecureSkipTLSVerify=True), DEFAULT_RELEASE, DEFAULT_NAMESPACE),
    ("metacontroller-ignores-aggregated-api", aggregated_api(mode="metacontroller", certManager=CERT_MANAGER),
     DEFAULT_RELEASE, DEFAULT_NAMESPACE),
    ("hooks-tls", {"hooks": {"tls": {"enabled": True}}}, DEFAULT_RELEASE, DEFAULT_NAMESPACE),
    ("hooks-mtls", {"hooks": {"tls": {"enabled": True, "clientAuth": True}}}, DEFAULT_RELEASE, DEFAULT_NAMESPACE),
    ("hooks-mtls-custom-release", {"hooks": {"tls": {"enabled": True, "clientAuth": True}}}, "a" * 53,
     "platform-hooks"),
    ("hooks-mtls-cert-manager", {"hooks": {"tls": {"enabled": True, "clientAuth": True,
                                                   "certManager": CERT_MANAGER}}}, DEFAULT_RELEASE,
     DEFAULT_NAMESPACE),
    ("hooks-mtls-cluster-issuer", {"hooks": {"tls": {"enabled": True, "clientAuth": True, "certManager": {
        "enabled": True, "issuerRef": {"name": "platform-ca", "kind": "ClusterIssuer"}, "duration": "720h"}}},
        "metrics": {"serviceMonitor": {"enabled": True}}}, DEFAULT_RELEASE, DEFAULT_NAMESPACE),
    ("admission", {"hooks": {"tls": {"enabled": True}}, "admission": {"enabled": True}}, DEFAULT_RELEASE,
     DEFAULT_NAMESPACE),
    ("driver-admission-mtls-cert-manager", {"mode": "driver", "admission": {"enabled": True, "failurePolicy": "Ignore"},
                                            "hooks": {"tls": {"enabled": True, "clientAuth": True,
                                                              "certManager": CERT_MANAGER}}},
     DEFAULT_RELEASE, DEFAULT_NAMESPACE),
    ("driver-hooks-mtls", {"mode": "driver", "hooks": {"tls": {"enabled": True, "clientAuth": True}},
                           "driver": {"aggregatedApi": {"enabled": True}}}, DEFAULT_RELEASE, DEFAULT_NAMESPACE),
    ("minimal", {"replicas": 1, "podDisruptionBudget": {"enabled": False}, "networkPolicy": {"enabled": False},
                 "serviceAccount": {"create": False, "name": "existing"}, "lifecycle": {"preStopSleepSeconds": 0},
                 "topologySpreadConstraints": [], "resources": {}}, DEFAULT_RELEASE, DEFAULT_NAMESPACE),
    ("driver-minimal", {"mode": "driver", "replicas": 1, "serviceAccount": {"create": False, "name": "existing"},
                        "rbac": {"create": False}}, DEFAULT_RELEASE, DEFAULT_NAMESPACE),
]


@pytest.fixture(scope="module", params=SCENARIOS, ids=[s[0] for s in SCENARIOS])
def scenario(request: pytest.FixtureRequest, chart: helm_python.Chart) -> tuple[str, dict, Rendered]:
    name, values, release, namespace = request.param
    return name, values, render(chart, values, release=release, namespace=namespace)


# --------------------------------------------------------------------------
# Lint


@pytest.mark.parametrize("values", [{}, {"mode": "driver"}, EVERYTHING, aggregated_api(),
                                    aggregated_api(certManager=CERT_MANAGER)],
                         ids=["default", "driver", "everything", "aggregated-api", "aggregated-api-cert-manager"])
@pytest.mark.parametrize("kube_version", KUBE_VERSIONS)
def test_lint_strict_passes(values: dict, kube_version: str) -> None:
    report = helm_python.lint(CHART, values, strict=True, namespace=DEFAULT_NAMESPACE,
                              kube_version=f"v{kube_version}.0")
    # Severity 1 is informational ("icon is recommended"); strict mode fails
    # on warnings (2) and errors (3).
    serious = [m for m in report["messages"] if m["severity"] >= 2]
    assert report["total_charts_linted"] == 1
    assert not serious and not report["errors"], serious or report["errors"]


def test_lint_reports_bad_values() -> None:
    report = helm_python.lint(CHART, {"mode": "operator"}, strict=True)
    assert any("/mode" in m["error"] for m in report["messages"] if m["severity"] == 3), report


# --------------------------------------------------------------------------
# Every rendered object is valid, in every scenario


@pytest.mark.parametrize("kube_version", KUBE_VERSIONS)
def test_every_object_validates_strictly(scenario: tuple[str, dict, Rendered], kube_version: str) -> None:
    _, _, out = scenario
    assert out.objects, "nothing rendered"
    problems = {
        f"{obj['kind']}/{obj['metadata'].get('name')}": errors
        for obj in out.objects
        if (errors := validation_errors(obj, kube_version))
    }
    assert not problems, problems


def test_objects_are_named_and_namespaced_consistently(scenario: tuple[str, dict, Rendered]) -> None:
    name, values, out = scenario
    namespace = values.get("namespaceOverride") or out.namespace
    seen = set()
    for obj in out.objects:
        meta = obj["metadata"]
        key = (obj["kind"], meta["name"])
        assert key not in seen, f"{key} rendered twice"
        seen.add(key)
        if obj["kind"] == "APIService":
            # Fixed by the API: <version>.<group>.
            assert meta["name"] == f"{obj['spec']['version']}.{obj['spec']['group']}"
        elif obj["kind"] == "CustomResourceDefinition":
            # Fixed by the API too: <plural>.<group>.
            assert meta["name"] == f"{obj['spec']['names']['plural']}.{obj['spec']['group']}"
        else:
            assert DNS_LABEL.match(meta["name"]) and len(meta["name"]) <= 63, meta["name"]
        if obj["kind"] in CLUSTER_SCOPED:
            assert "namespace" not in meta, f"cluster-scoped {key} has a namespace"
        elif is_auth_reader_binding(obj):
            # The Role it binds exists only in kube-system.
            assert meta.get("namespace") == "kube-system", key
        else:
            assert meta.get("namespace") == namespace, f"{key} is in {meta.get('namespace')}, not {namespace}"
        labels = meta.get("labels", {})
        assert labels.get("app.kubernetes.io/instance") == out.release, key
        assert labels.get("app.kubernetes.io/managed-by") == "Helm", key
        for label, value in {**labels, **meta.get("annotations", {})}.items():
            assert isinstance(value, str), f"{key}: {label} is {value!r}, not a string"


def test_pods_are_hardened_unless_overridden(scenario: tuple[str, dict, Rendered]) -> None:
    name, _, out = scenario
    # Pod Security Standards "restricted" holds in every scenario, even when
    # the user changes uid or the read-only root filesystem; for every
    # Deployment (one per shard).
    for deployment in out.all("Deployment"):
        assert restricted_violations(deployment["spec"]["template"]["spec"]) == [], deployment["metadata"]["name"]


# --------------------------------------------------------------------------
# Metacontroller mode (default)


def test_default_renders_the_metacontroller_mode_objects(default: Rendered) -> None:
    assert default.kinds() == sorted(
        ["CompositeController"] * len(CONTROLLERS)
        + ["CustomResourceDefinition"] * len(conversion_files())
        + ["Deployment", "NetworkPolicy", "PodDisruptionBudget", "Service", "ServiceAccount"]
    )
    assert {cc["metadata"]["name"] for cc in default.all("CompositeController")} == set(CONTROLLERS)


def test_default_deployment(default: Rendered) -> None:
    deployment = default.deployment
    assert deployment["metadata"]["name"] == "metahook"
    assert deployment["spec"]["replicas"] == 2
    assert deployment["spec"]["strategy"] == {"type": "RollingUpdate",
                                              "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}}
    assert default.container["args"] == ["serve"]
    assert default.container["image"] == f"ghcr.io/metahook/metahook:{chart_metadata()['appVersion']}"
    assert default.container["imagePullPolicy"] == "IfNotPresent"
    assert default.container["ports"] == [{"name": "http", "containerPort": 8080, "protocol": "TCP"}]
    env = default.env()
    assert env["METAHOOK_LISTEN"] == "0.0.0.0:8080"
    assert env["METAHOOK_LOG_FORMAT"] == "json"
    assert "METAHOOK_WORKERS" not in env  # one per CPU unless set
    assert not set(env) & set(DRIVER_ENV), "driver settings in metacontroller mode"
    assert "annotations" not in deployment["spec"]["template"]["metadata"]
    selector = deployment["spec"]["selector"]["matchLabels"]
    assert selector == {"app.kubernetes.io/name": "metahook", "app.kubernetes.io/instance": "metahook"}
    assert deployment["spec"]["template"]["metadata"]["labels"] == selector


def cli_source() -> str:
    """The command line's definition: metahook/src/cli.rs and its modules
    (cli/driver.rs holds the driver's flags), tests left out."""
    cli = ROOT / "metahook" / "src" / "cli.rs"
    parts = [cli] + sorted(p for p in (cli.parent / "cli").glob("*.rs") if p.name != "tests.rs")
    return "\n".join(p.read_text() for p in parts)


def cli_default(env_name: str) -> int:
    """The default the command line gives the flag read from `env_name`: in
    metahook/src/cli.rs the flag names a constant of `metahook_service::defaults`
    (service/src/settings.rs), a product of integers (`128 * 1024 * 1024`)."""
    match = re.search(r'env = "%s", default_value_t = defaults::(\w+)\)' % env_name, cli_source())
    assert match, f"no default from metahook_service::defaults for {env_name} in metahook/src/cli.rs"
    service = (ROOT / "service" / "src" / "settings.rs").read_text()
    value = re.search(r"pub const %s: \w+ = ([0-9 *]+);" % match.group(1), service)
    assert value, f"no integer constant {match.group(1)} in service/src/settings.rs"
    product = 1
    for factor in value.group(1).split("*"):
        product *= int(factor)
    return product


def test_memory_budget_is_half_the_memory_limit_by_default(default: Rendered) -> None:
    """The chart's default budget for request bodies is the binary's default,
    half of the default 256Mi limit; the body limit fits in it."""
    env = default.env()
    limit = 256 * 1024 * 1024
    assert default.container["resources"]["limits"]["memory"] == "256Mi"
    assert env["METAHOOK_MAX_BUFFERED_BYTES"] == str(limit // 2)
    assert int(env["METAHOOK_MAX_BUFFERED_BYTES"]) == cli_default("METAHOOK_MAX_BUFFERED_BYTES")
    assert int(env["METAHOOK_MAX_BODY_BYTES"]) <= int(env["METAHOOK_MAX_BUFFERED_BYTES"])


@pytest.mark.parametrize(("memory", "budget"), [
    ("512Mi", 256 * 2**20), ("1Gi", 2**29), ("0.5Gi", 2**28), ("300M", 150_000_000), ("+2Gi", 2**30),
    (268435456, 134217728),
])
def test_memory_budget_follows_the_memory_limit(chart: helm_python.Chart, memory: str | int, budget: int) -> None:
    out = render(chart, {"resources": {"limits": {"memory": memory}}})
    assert out.env()["METAHOOK_MAX_BUFFERED_BYTES"] == str(budget)


def test_memory_budget_can_be_set_or_left_to_the_binary(chart: helm_python.Chart) -> None:
    explicit = render(chart, {"server": {"maxBufferedBytes": 100_000_000}})
    assert explicit.env()["METAHOOK_MAX_BUFFERED_BYTES"] == "100000000"
    # No memory limit and no value: the binary's default applies.
    unlimited = render(chart, {"resources": {"limits": None}})
    assert "METAHOOK_MAX_BUFFERED_BYTES" not in unlimited.env()
    with pytest.raises(helm_python.HelmError, match="server.maxBufferedBytes"):
        render(chart, {"resources": {"limits": {"memory": "1e9"}}})


def test_a_body_limit_over_the_memory_budget_fails(chart: helm_python.Chart) -> None:
    """A body larger than the budget could never be held: say so at install
    rather than answer every such request 413."""
    with pytest.raises(helm_python.HelmError, match="maxBodyBytes .* is over the memory budget"):
        render(chart, {"resources": {"limits": {"memory": "32Mi"}}})
    with pytest.raises(helm_python.HelmError, match="maxBodyBytes .* is over the memory budget"):
        render(chart, {"server": {"maxBufferedBytes": 1024}})
    fits = render(chart, {"resources": {"limits": {"memory": "32Mi"}}, "server": {"maxBodyBytes": 8388608}})
    assert fits.env()["METAHOOK_MAX_BUFFERED_BYTES"] == str(16 * 2**20)


def test_probes_hit_health_endpoints(default: Rendered) -> None:
    liveness, readiness = default.container["livenessProbe"], default.container["readinessProbe"]
    assert liveness["httpGet"] == {"path": "/healthz", "port": "http"}
    assert readiness["httpGet"] == {"path": "/readyz", "port": "http"}
    assert liveness["periodSeconds"] > 0 and readiness["periodSeconds"] > 0


def test_resources_have_requests_and_limits(default: Rendered) -> None:
    resources = default.container["resources"]
    assert set(resources["requests"]) == {"cpu", "memory"}
    assert set(resources["limits"]) == {"cpu", "memory"}


def test_shutdown_fits_in_the_grace_period(default: Rendered) -> None:
    env = default.env()
    sleep = default.container["lifecycle"]["preStop"]["sleep"]["seconds"]
    assert sleep > 0
    assert sleep + int(env["METAHOOK_SHUTDOWN_TIMEOUT_SECONDS"]) < default.pod_spec["terminationGracePeriodSeconds"]


def test_driver_mode_serves_the_delay_after_sigterm_instead_of_sleeping_before(chart: helm_python.Chart) -> None:
    """A preStop sleep would keep the leader leading (and a standby
    waiting) through it: in driver mode the process gets SIGTERM at once,
    stops the driver, and serves the delay itself (--shutdown-delay-seconds)."""
    out = render(chart, {"mode": "driver", "lifecycle": {"preStopSleepSeconds": 7}})
    env = out.env()
    assert "lifecycle" not in out.container
    assert env["METAHOOK_SHUTDOWN_DELAY_SECONDS"] == "7"
    assert 7 + int(env["METAHOOK_SHUTDOWN_TIMEOUT_SECONDS"]) < out.pod_spec["terminationGracePeriodSeconds"]
    off = render(chart, {"mode": "driver", "lifecycle": {"preStopSleepSeconds": 0}})
    assert "lifecycle" not in off.container
    assert "METAHOOK_SHUTDOWN_DELAY_SECONDS" not in off.env()


def test_pod_is_hardened_by_default(default: Rendered) -> None:
    pod, container = default.pod_spec, default.container
    assert restricted_violations(pod) == []
    assert pod["securityContext"] == {
        "runAsNonRoot": True, "runAsUser": 65532, "runAsGroup": 65532, "fsGroup": 65532,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    ctx = container["securityContext"]
    assert ctx["runAsNonRoot"] is True and ctx["runAsUser"] == 65532 and ctx["runAsGroup"] == 65532
    assert ctx["readOnlyRootFilesystem"] is True
    assert ctx["allowPrivilegeEscalation"] is False
    assert ctx["privileged"] is False
    assert ctx["capabilities"] == {"drop": ["ALL"]}
    assert ctx["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod["enableServiceLinks"] is False
    assert "volumes" not in pod and "hostNetwork" not in pod


def test_hook_service_gets_no_api_token(default: Rendered) -> None:
    assert default.one("ServiceAccount")["automountServiceAccountToken"] is False
    assert default.pod_spec["automountServiceAccountToken"] is False
    assert default.pod_spec["serviceAccountName"] == default.one("ServiceAccount")["metadata"]["name"]
    for kind in ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"):
        assert not default.all(kind), f"metacontroller mode needs no {kind}"


def test_replicas_are_spread_across_nodes(default: Rendered) -> None:
    constraints = default.pod_spec["topologySpreadConstraints"]
    selector = default.deployment["spec"]["selector"]
    by_key = {c["topologyKey"]: c for c in constraints}
    hostname = by_key["kubernetes.io/hostname"]
    assert hostname["whenUnsatisfiable"] == "DoNotSchedule" and hostname["maxSkew"] == 1
    assert hostname["nodeTaintsPolicy"] == "Honor"
    assert "topology.kubernetes.io/zone" in by_key
    for c in constraints:
        assert c["labelSelector"] == selector
        assert c["matchLabelKeys"] == ["pod-template-hash"]


def test_pod_disruption_budget(default: Rendered) -> None:
    pdb = default.one("PodDisruptionBudget")
    assert pdb["spec"]["selector"] == default.deployment["spec"]["selector"]
    assert pdb["spec"]["maxUnavailable"] == 1 and "minAvailable" not in pdb["spec"]
    assert pdb["spec"]["unhealthyPodEvictionPolicy"] == "AlwaysAllow"


def test_pod_disruption_budget_keeps_zero_and_prefers_min_available(chart: helm_python.Chart) -> None:
    zero = render(chart, {"podDisruptionBudget": {"maxUnavailable": 0}}).one("PodDisruptionBudget")
    assert zero["spec"]["maxUnavailable"] == 0
    minimum = render(chart, {"podDisruptionBudget": {"minAvailable": 1}}).one("PodDisruptionBudget")
    assert minimum["spec"]["minAvailable"] == 1 and "maxUnavailable" not in minimum["spec"]


def test_service_targets_the_pods(default: Rendered) -> None:
    service = default.one("Service")
    assert service["spec"]["type"] == "ClusterIP"
    assert service["spec"]["selector"] == default.deployment["spec"]["selector"]["matchLabels"]
    assert service["spec"]["ports"] == [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}]


def test_network_policy_admits_metacontroller_and_scrapers_only(default: Rendered) -> None:
    policy = default.one("NetworkPolicy")["spec"]
    assert policy["podSelector"] == default.deployment["spec"]["selector"]
    assert policy["policyTypes"] == ["Ingress", "Egress"]
    assert policy["egress"] == []
    hooks, metrics = policy["ingress"]
    assert hooks["from"] == [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "metacontroller"}}}]
    assert metrics["from"] == [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]
    for rule in policy["ingress"]:
        assert rule["ports"] == [{"port": "http", "protocol": "TCP"}]


def test_network_policy_is_configurable(chart: helm_python.Chart) -> None:
    out = render(chart, EVERYTHING)
    hooks, metrics = out.one("NetworkPolicy")["spec"]["ingress"]
    assert hooks["from"] == [{
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "mc-system"}},
        "podSelector": {"matchLabels": {"app.kubernetes.io/name": "metacontroller"}},
    }]
    assert metrics["from"] == EVERYTHING["networkPolicy"]["metricsFrom"]
    no_scrapers = render(chart, {"networkPolicy": {"metricsFrom": []}}).one("NetworkPolicy")["spec"]
    assert len(no_scrapers["ingress"]) == 1
    open_egress = render(chart, {"networkPolicy": {"denyEgress": False}}).one("NetworkPolicy")["spec"]
    assert open_egress["policyTypes"] == ["Ingress"] and "egress" not in open_egress


def test_service_monitor_is_optional(default: Rendered, chart: helm_python.Chart) -> None:
    assert not default.all("ServiceMonitor")
    out = render(chart, EVERYTHING)
    monitor = out.one("ServiceMonitor")
    assert monitor["metadata"]["labels"]["release"] == "prometheus"
    assert monitor["spec"]["selector"]["matchLabels"] == out.deployment["spec"]["selector"]["matchLabels"]
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": [DEFAULT_NAMESPACE]}
    [endpoint] = monitor["spec"]["endpoints"]
    assert endpoint["port"] == out.one("Service")["spec"]["ports"][0]["name"]
    assert endpoint["path"] == "/metrics"
    assert (endpoint["interval"], endpoint["scrapeTimeout"]) == ("15s", "5s")


def test_notes_tell_the_user_what_to_do_next(default: Rendered, driver: Rendered, chart: helm_python.Chart) -> None:
    assert "metacontroller mode" in default.notes
    assert "kubectl -n metahook rollout status deployment/metahook" in default.notes
    assert "http://metahook.metahook:80/<controller>/<hook>" in default.notes
    assert f"kubectl get compositecontrollers {' '.join(CONTROLLERS)}" in default.notes
    assert "driver mode" in driver.notes
    assert "get lease metahook" in driver.notes
    assert "compositecontrollers" not in driver.notes
    # A standby is never ready: with two replicas a rollout never completes,
    # so driver mode does not send the user to `rollout status`...
    pair = render(chart, {"mode": "driver", "replicas": 2}).notes
    assert "rollout status deployment/metahook" not in pair
    assert "get pods -l app.kubernetes.io/instance=metahook,app.kubernetes.io/name=metahook" in pair
    assert "only the one holding the Lease becomes\n   Ready" in pair
    # ...unless there is only one pod (the driver-mode default), which
    # becomes ready once it leads.
    assert "kubectl -n metahook rollout status deployment/metahook" in driver.notes
    assert "stand by" not in driver.notes


def test_replicas_default_by_mode(default: Rendered, driver: Rendered, chart: helm_python.Chart) -> None:
    assert default.deployment["spec"]["replicas"] == 2
    assert driver.deployment["spec"]["replicas"] == 1
    assert render(chart, {"mode": "driver", "replicas": 3}).deployment["spec"]["replicas"] == 3
    assert render(chart, {"replicas": 1}).deployment["spec"]["replicas"] == 1


SHARDS = [
    {"name": "a", "selector": "metahook.dev/shard=a"},
    {"name": "rest", "selector": "metahook.dev/shard notin (a)"},
]


def test_shards_are_a_deployment_and_a_lease_each(chart: helm_python.Chart, driver: Rendered) -> None:
    out = render(chart, {"mode": "driver", "driver": {"shards": SHARDS}})
    deployments = {d["metadata"]["name"]: d for d in out.all("Deployment")}
    base = driver.deployment["metadata"]["name"]
    assert sorted(deployments) == sorted(f"{base}-{s['name']}" for s in SHARDS)
    leases = sorted(lease["metadata"]["name"] for lease in out.all("Lease"))
    base_lease = driver.one("Lease")["metadata"]["name"]
    assert leases == sorted(f"{base_lease}-{s['name']}" for s in SHARDS)
    selectors = []
    for shard in SHARDS:
        d = deployments[f"{base}-{shard['name']}"]
        env = {e["name"]: e.get("value") for e in d["spec"]["template"]["spec"]["containers"][0]["env"]}
        assert env["METAHOOK_SHARD_SELECTOR"] == shard["selector"]
        assert env["METAHOOK_LEADER_ELECTION_LEASE"] == f"{base_lease}-{shard['name']}"
        match = d["spec"]["selector"]["matchLabels"]
        # Disjoint Deployments: each selects only its own pods...
        assert match["metahook.dev/shard"] == shard["name"]
        assert d["spec"]["template"]["metadata"]["labels"]["metahook.dev/shard"] == shard["name"]
        selectors.append(match)
    assert selectors[0] != selectors[1]
    # ...while the Service reaches every shard's hooks.
    service_selector = out.one("Service")["spec"]["selector"]
    assert "metahook.dev/shard" not in service_selector
    # Each shard may hold its own Lease, and only that one.
    held = lease_holders(out)
    assert len(held) == len(SHARDS), held
    for d in out.all("Deployment"):
        pod = d["spec"]["template"]["spec"]
        own = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}["METAHOOK_LEADER_ELECTION_LEASE"]
        assert held[pod["serviceAccountName"]] == [own], held
    # Sharing one ServiceAccount, the shards share one Role for every Lease.
    shared = render(chart, {"mode": "driver", "serviceAccount": {"create": False, "name": "existing"},
                            "driver": {"shards": SHARDS}})
    assert {a: sorted(ls) for a, ls in lease_holders(shared).items()} == {"existing": sorted(leases)}
    # Unsharded: one Deployment and one Lease, without a shard selector.
    assert "METAHOOK_SHARD_SELECTOR" not in driver.env()
    assert len(driver.all("Lease")) == 1


def test_shards_are_refused_where_they_cannot_work(chart: helm_python.Chart) -> None:
    with pytest.raises(helm_python.HelmError, match="used twice"):
        render(chart, {"mode": "driver", "driver": {"shards": [SHARDS[0], SHARDS[0]]}})
    with pytest.raises(helm_python.HelmError, match="cannot be used with shards"):
        render(chart, {"mode": "driver", "driver": {"shards": SHARDS, "aggregatedApi": {"enabled": True}}})
    # Metacontroller mode has no driver: shards change nothing.
    plain = render(chart, {})
    sharded = render(chart, {"driver": {"shards": SHARDS}})
    assert plain.kinds() == sharded.kinds()


def lease_holders(out: Rendered) -> dict[str, list[str]]:
    """Each ServiceAccount and the Leases a Role bound to it may update."""
    held: dict[str, list[str]] = {}
    for role in out.all("Role"):
        names = [n for rule in role["rules"] if "leases" in rule["resources"] and "update" in rule["verbs"]
                 for n in rule.get("resourceNames", [])]
        if not names:
            continue
        [binding] = [b for b in out.all("RoleBinding") if b["roleRef"]["name"] == role["metadata"]["name"]]
        for subject in binding["subjects"]:
            held.setdefault(subject["name"], []).extend(names)
    return held


def subjects(out: Rendered, kind: str) -> list[str]:
    """The ServiceAccounts a (Cluster)RoleBinding of the driver binds."""
    [binding] = [b for b in out.all(kind) if b["roleRef"]["name"] != "extension-apiserver-authentication-reader"]
    assert {s["kind"] for s in binding["subjects"]} == {"ServiceAccount"}
    assert {s["namespace"] for s in binding["subjects"]} == {out.namespace}
    return [s["name"] for s in binding["subjects"]]


def test_shards_run_as_a_service_account_each(chart: helm_python.Chart, driver: Rendered) -> None:
    """So that the API server's audit log and RBAC tell one shard's requests
    from another's: each Deployment runs as <serviceAccount>-<shard>, each
    bound to the driver's ClusterRole and Lease Role; the release's own
    ServiceAccount is not rendered, as no pod would use it."""
    out = render(chart, {"mode": "driver", "driver": {"shards": SHARDS}})
    base = driver.one("ServiceAccount")["metadata"]["name"]
    expected = [f"{base}-{s['name']}" for s in SHARDS]
    accounts = out.all("ServiceAccount")
    assert sorted(a["metadata"]["name"] for a in accounts) == sorted(expected)
    assert all(a["automountServiceAccountToken"] is True for a in accounts)
    by_deployment = {d["metadata"]["name"]: d["spec"]["template"]["spec"]["serviceAccountName"]
                     for d in out.all("Deployment")}
    assert by_deployment == {f"{driver.deployment['metadata']['name']}-{s['name']}": f"{base}-{s['name']}"
                             for s in SHARDS}
    assert subjects(out, "ClusterRoleBinding") == expected
    assert sorted(lease_holders(out)) == sorted(expected)
    # Unsharded, unchanged: the one account, bound alone.
    assert [a["metadata"]["name"] for a in driver.all("ServiceAccount")] == [base]
    assert driver.pod_spec["serviceAccountName"] == base
    assert subjects(driver, "ClusterRoleBinding") == subjects(driver, "RoleBinding") == [base]
    # A named account is the prefix.
    named = render(chart, {"mode": "driver", "serviceAccount": {"create": True, "name": "robot"},
                           "driver": {"shards": SHARDS}})
    assert sorted(a["metadata"]["name"] for a in named.all("ServiceAccount")) == ["robot-a", "robot-rest"]
    # Within 63 characters, the shard's name kept whole.
    long_name = "r" * 63
    long = render(chart, {"mode": "driver", "serviceAccount": {"create": True, "name": long_name},
                          "driver": {"shards": SHARDS}})
    accounts = sorted(a["metadata"]["name"] for a in long.all("ServiceAccount"))
    assert accounts == sorted(long_name[:62 - len(s["name"])] + f"-{s['name']}" for s in SHARDS)
    assert all(len(a) == 63 for a in accounts), accounts


def test_shards_share_an_existing_service_account(chart: helm_python.Chart) -> None:
    """With serviceAccount.create false the chart cannot make one per shard:
    every shard runs as the one named, bound once."""
    out = render(chart, {"mode": "driver", "serviceAccount": {"create": False, "name": "existing"},
                         "driver": {"shards": SHARDS}})
    assert not out.all("ServiceAccount")
    assert {d["spec"]["template"]["spec"]["serviceAccountName"] for d in out.all("Deployment")} == {"existing"}
    assert subjects(out, "ClusterRoleBinding") == subjects(out, "RoleBinding") == ["existing"]


def selects(selector: dict, labels: dict) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def test_shard_selectors_do_not_mix_shards(chart: helm_python.Chart, driver: Rendered) -> None:
    """Each shard's Deployment, and its spread constraints, count only its own
    pods; the release-wide objects (Service, NetworkPolicy) cover every
    shard's pods with the same rules; driver mode has no
    PodDisruptionBudget, sharded or not."""
    three = [*SHARDS, {"name": "b", "selector": "metahook.dev/shard=b"}]
    out = render(chart, {"mode": "driver", "replicas": 2, "driver": {"shards": three},
                         "podDisruptionBudget": {"enabled": True}})
    deployments = out.all("Deployment")
    assert len(deployments) == 3
    pods = {d["metadata"]["name"]: d["spec"]["template"]["metadata"]["labels"] for d in deployments}
    for d in deployments:
        name, selector = d["metadata"]["name"], d["spec"]["selector"]["matchLabels"]
        assert [other for other, labels in pods.items() if selects(selector, labels)] == [name]
        for constraint in d["spec"]["template"]["spec"]["topologySpreadConstraints"]:
            assert constraint["labelSelector"]["matchLabels"] == selector
        # Nor does a shard's Deployment select the unsharded release's pods.
        assert not selects(selector, driver.deployment["spec"]["template"]["metadata"]["labels"])
    policy = out.one("NetworkPolicy")["spec"]
    assert all(selects(policy["podSelector"]["matchLabels"], labels) for labels in pods.values())
    assert policy == driver.one("NetworkPolicy")["spec"]
    assert all(selects(out.one("Service")["spec"]["selector"], labels) for labels in pods.values())
    assert not out.all("PodDisruptionBudget")


def test_notes_name_each_shards_deployment_and_lease(chart: helm_python.Chart) -> None:
    out = render(chart, {"mode": "driver", "driver": {"shards": SHARDS}})
    for shard in SHARDS:
        assert f"rollout status deployment/metahook-{shard['name']}" in out.notes
        assert f"get lease metahook-{shard['name']}" in out.notes
        assert f"logs deployment/metahook-{shard['name']}" in out.notes
        assert f"# {shard['name']}: {shard['selector']}" in out.notes
    # No Deployment or Lease without the shard's suffix exists.
    assert "deployment/metahook\n" not in out.notes and "get lease metahook\n" not in out.notes


# --------------------------------------------------------------------------
# The CompositeControllers: chart/metacontroller/*.yaml, pointed at the release


def expected_compositecontroller(source: dict, service: str, namespace: str, port: int) -> dict:
    expected = copy.deepcopy(source)
    for hook in expected["spec"]["hooks"].values():
        hook["webhook"]["service"].update({"name": service, "namespace": namespace, "port": port})
    return expected


@pytest.mark.parametrize(
    "values, release, namespace, service, service_namespace, port",
    [
        ({}, DEFAULT_RELEASE, DEFAULT_NAMESPACE, "metahook", "metahook", 80),
        ({}, "hooks-prod", "platform-hooks", "hooks-prod-metahook", "platform-hooks", 80),
        ({"service": {"port": 8081}, "fullnameOverride": "hooks", "namespaceOverride": "hooks-system"},
         "x", "default", "hooks", "hooks-system", 8081),
    ],
    ids=["default", "custom-release", "overrides"],
)
def test_compositecontrollers_equal_the_sources(
    chart: helm_python.Chart, values: dict, release: str, namespace: str,
    service: str, service_namespace: str, port: int,
) -> None:
    out = render(chart, values, release=release, namespace=namespace)
    assert out.one("Service")["metadata"]["name"] == service
    assert out.one("Service")["spec"]["ports"][0]["port"] == port
    sources = controller_manifests()
    rendered = {cc["metadata"]["name"]: copy.deepcopy(cc) for cc in out.all("CompositeController")}
    assert set(rendered) == set(sources)
    for name, cc in rendered.items():
        # The only addition: the chart's labels, so `kubectl get cc -l
        # app.kubernetes.io/instance=<release>` finds them.
        assert cc["metadata"].pop("labels") == expected_labels(release), name
        assert cc == expected_compositecontroller(sources[name], service, service_namespace, port), name


def test_compositecontrollers_follow_the_project_rules() -> None:
    """What the project asks of every manifest: v2 hooks through the Service,
    paths /<controller>/<hook>, generateSelector, an explicit update strategy."""
    schema = CUSTOM_SCHEMAS[("metacontroller.k8s.io/v1alpha1", "CompositeController")]
    for name, cc in controller_manifests().items():
        assert schema_errors(schema, cc) == [], name
        spec = cc["spec"]
        assert spec["generateSelector"] is True, name
        for child in spec["childResources"]:
            assert "method" in child.get("updateStrategy", {}), f"{name}: {child['resource']} has no update strategy"
        for hook_name, hook in spec["hooks"].items():
            assert hook["version"] == "v2", f"{name}.{hook_name}"
            webhook = hook["webhook"]
            assert "url" not in webhook, f"{name}.{hook_name} must use the service reference"
            assert webhook["path"] == f"/{name}/{hook_name}"
            assert webhook["service"] == {"name": "metahook", "namespace": "metahook", "port": 80}
    assert "finalize" in controller_manifests()["hello"]["spec"]["hooks"]


def test_compositecontroller_schema_catches_mistakes() -> None:
    """The docs/metacontroller.md §2 schema is not vacuous: each mistake below
    is rejected."""
    schema = CUSTOM_SCHEMAS[("metacontroller.k8s.io/v1alpha1", "CompositeController")]
    good = controller_manifests()["hello"]
    mistakes = {
        "unknown spec field": lambda cc: cc["spec"].update(resyncPeriod=30),
        "bad update method": lambda cc: cc["spec"]["childResources"][0]["updateStrategy"].update(method="Rolling"),
        "bad hook version": lambda cc: cc["spec"]["hooks"]["sync"].update(version="v3"),
        "no path": lambda cc: cc["spec"]["hooks"]["sync"]["webhook"].pop("path"),
        "bad timeout": lambda cc: cc["spec"]["hooks"]["sync"]["webhook"].update(timeout="10"),
        "unknown hook": lambda cc: cc["spec"]["hooks"].update(reconcile=cc["spec"]["hooks"]["sync"]),
        "namespaced": lambda cc: cc["metadata"].update(namespace="x"),
        "no parent": lambda cc: cc["spec"].pop("parentResource"),
        "string bool": lambda cc: cc["spec"].update(generateSelector="true"),
    }
    assert schema_errors(schema, good) == []
    for what, mutate in mistakes.items():
        bad = copy.deepcopy(good)
        mutate(bad)
        assert schema_errors(schema, bad), f"schema accepted: {what}"


# --------------------------------------------------------------------------
# Per-controller switches


@pytest.mark.parametrize("mode", ["metacontroller", "driver"])
@pytest.mark.parametrize("controller", CONTROLLERS)
def test_each_controller_alone(chart: helm_python.Chart, controller: str, mode: str) -> None:
    out = render(chart, only(controller, mode=mode))
    if mode == "metacontroller":
        assert [cc["metadata"]["name"] for cc in out.all("CompositeController")] == [controller]
        assert not out.all("ConfigMap")
    else:
        assert not out.all("CompositeController")
        assert controllers_config(out) == {f"{controller}.yaml": controller_manifests()[controller]}
        assert cluster_role_grants(out) == expected_driver_grants([controller])
    assert f"Controllers: {controller}." in out.notes


def test_at_least_one_controller_must_be_enabled(chart: helm_python.Chart) -> None:
    values = {"controllers": {name: {"enabled": False} for name in CONTROLLERS}}
    with pytest.raises(helm_python.HelmError, match="no controller is enabled"):
        render(chart, values)


def test_every_manifest_needs_a_switch(chart: helm_python.Chart, tmp_path: Path) -> None:
    """A new metacontroller/<name>.yaml without controllers.<name> in the
    values fails loudly instead of being silently skipped or enabled."""
    copy_dir = Path(chart.save_dir(tmp_path))
    extra = copy.deepcopy(controller_manifests()["hello"])
    extra["metadata"]["name"] = "extra"
    (copy_dir / "metacontroller" / "extra.yaml").write_text(yaml.safe_dump(extra))
    with helm_python.Chart.load(copy_dir) as modified:
        with pytest.raises(helm_python.HelmError, match=r"no controllers\.extra\.enabled"):
            render(modified)


def test_values_have_a_switch_for_every_manifest(chart: helm_python.Chart) -> None:
    assert sorted(chart.values["controllers"]) == CONTROLLERS
    assert all(chart.values["controllers"][c]["enabled"] is True for c in CONTROLLERS)
    assert sorted(chart.schema["properties"]["controllers"]["properties"]) == CONTROLLERS
    assert sorted(chart.schema["properties"]["controllers"]["required"]) == CONTROLLERS


# --------------------------------------------------------------------------
# Driver mode


def api_group(api_version: str) -> str:
    return api_version.rpartition("/")[0]


# What driver/src/ calls (README "What it needs (RBAC)"): parents are watched
# and JSON-patched (finalizer), their status JSON-patched, children watched,
# server-side applied (create + patch), patched (owner references) and
# deleted. Nothing is ever updated (PUT). `update` on the parents' finalizers
# is what the OwnerReferencesPermissionEnforcement admission plugin asks of
# whoever sets an owner reference with blockOwnerDeletion (the driver does,
# on every child); test_install.py shows the API server refusing without it.
PARENT_VERBS = {"get", "list", "watch", "patch"}
STATUS_VERBS = {"patch"}
FINALIZERS_VERBS = {"update"}
CHILD_VERBS = {"get", "list", "watch", "create", "patch", "delete"}

# The driver's settings the chart passes, by the names the command line reads
# (metahook/src/cli/driver.rs).
DRIVER_ENV = ("METAHOOK_CONTROLLERS", "METAHOOK_LEADER_ELECTION", "METAHOOK_LEADER_ELECTION_LEASE",
              "POD_NAMESPACE", "POD_NAME")
CONTROLLERS_DIR = "/etc/metahook/controllers"


def binary_env_names() -> set[str]:
    """Every environment variable the metahook CLI reads (clap `env = "..."`)."""
    return set(re.findall(r'\benv\s*=\s*"([A-Z0-9_]+)"', cli_source()))


def controllers_config(out: Rendered) -> dict[str, dict]:
    """The driver-mode ConfigMap's files, parsed, after checking the pod
    mounts it read-only where METAHOOK_CONTROLLERS points."""
    config_map = out.one("ConfigMap")
    [volume] = [v for v in out.pod_spec["volumes"] if v["name"] == "controllers"]
    assert volume == {"name": "controllers", "configMap": {"name": config_map["metadata"]["name"]}}
    [mount] = [m for m in out.container["volumeMounts"] if m["name"] == "controllers"]
    assert mount == {"name": "controllers", "mountPath": CONTROLLERS_DIR, "readOnly": True}
    assert out.env()["METAHOOK_CONTROLLERS"] == CONTROLLERS_DIR
    assert set(config_map) == {"apiVersion", "kind", "metadata", "data"}
    return {name: load_yaml_file_text(text) for name, text in config_map["data"].items()}


def load_yaml_file_text(text: str) -> dict:
    [doc] = load_yaml_documents(text)
    return doc


def expected_driver_grants(controllers: list[str]) -> dict[tuple[str, str], set[str]]:
    """(group, resource) -> verbs the driver needs, from chart/metacontroller/*.yaml."""
    grants: dict[tuple[str, str], set[str]] = {("events.k8s.io", "events"): {"create", "patch"}}
    for name in controllers:
        spec = controller_manifests()[name]["spec"]
        parent = spec["parentResource"]
        group = api_group(parent["apiVersion"])
        grants.setdefault((group, parent["resource"]), set()).update(PARENT_VERBS)
        grants.setdefault((group, parent["resource"] + "/status"), set()).update(STATUS_VERBS)
        grants.setdefault((group, parent["resource"] + "/finalizers"), set()).update(FINALIZERS_VERBS)
        for child in spec["childResources"]:
            grants.setdefault((api_group(child["apiVersion"]), child["resource"]), set()).update(CHILD_VERBS)
    return grants


def cluster_role_grants(out: Rendered) -> dict[tuple[str, str], set[str]]:
    return cluster_role_grants_of(out.one("ClusterRole"))


def cluster_role_grants_of(role: dict) -> dict[tuple[str, str], set[str]]:
    grants: dict[tuple[str, str], set[str]] = {}
    for rule in role["rules"]:
        assert "resourceNames" not in rule and "nonResourceURLs" not in rule
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                grants.setdefault((group, resource), set()).update(rule["verbs"])
    return grants


def test_driver_mode_objects(driver: Rendered) -> None:
    assert not driver.all("CompositeController")
    assert driver.kinds() == sorted([
        "ClusterRole", "ClusterRoleBinding", "ConfigMap", "Deployment", "Lease", "NetworkPolicy",
        "Role", "RoleBinding", "Service", "ServiceAccount",
    ] + ["CustomResourceDefinition"] * len(conversion_files()))
    assert driver.container["args"] == ["serve", "--drive"]
    assert driver.one("ServiceAccount")["automountServiceAccountToken"] is True
    assert driver.pod_spec["automountServiceAccountToken"] is True
    env = driver.env()
    assert env["METAHOOK_CONTROLLERS"] == CONTROLLERS_DIR
    assert env["METAHOOK_LEADER_ELECTION"] == "true"
    assert env["METAHOOK_LEADER_ELECTION_LEASE"] == "metahook"
    assert env["POD_NAMESPACE"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
    assert env["POD_NAME"] == {"fieldRef": {"fieldPath": "metadata.name"}}


def test_driver_env_names_are_the_ones_the_binary_reads(driver: Rendered, chart: helm_python.Chart) -> None:
    """Every METAHOOK_* / POD_* variable the chart sets is one the command line
    (metahook/src/cli.rs and cli/) declares, so a rename on either side fails
    here, not in a cluster."""
    known = binary_env_names()
    assert {"METAHOOK_CONTROLLERS", "METAHOOK_LISTEN", "METAHOOK_LEADER_ELECTION"} <= known, known
    assert set(DRIVER_ENV) <= known
    everything = render(chart, {**EVERYTHING, "mode": "driver",
                                "driver": {"leaseName": "metahook-leader", "kubeQps": 5, "kubeBurst": 10,
                                           "eventsQps": 0.5, "eventsBurst": 5, "reconcileDebounceMs": 100,
                                           "statusSettleMs": 500, "workers": 8}})
    hooks_only = render(chart, EVERYTHING)
    for out in (driver, everything, hooks_only):
        ours = [e["name"] for e in out.container["env"] if e["name"].startswith(("METAHOOK_", "POD_"))]
        assert ours and set(ours) <= known, set(ours) - known
        assert len(ours) == len(set(ours)), ours


def test_driver_api_budget_is_passed_only_when_set(driver: Rendered, chart: helm_python.Chart) -> None:
    """driver.kubeQps / kubeBurst become --kube-qps / --kube-burst; unset,
    the binary's default (no client-side limit) holds."""
    assert not {"METAHOOK_KUBE_QPS", "METAHOOK_KUBE_BURST"} & set(driver.env())
    for qps in (5, 2.5, 0.1, 1000000):
        env = render(chart, {"mode": "driver", "driver": {"kubeQps": qps, "kubeBurst": 20}}).env()
        # Helm may write 1000000 as "1e+06"; Rust's f64 parser reads either.
        assert re.fullmatch(r"[0-9.e+]+", env["METAHOOK_KUBE_QPS"]), env["METAHOOK_KUBE_QPS"]
        assert float(env["METAHOOK_KUBE_QPS"]) == qps
        assert env["METAHOOK_KUBE_BURST"] == "20"


@pytest.mark.parametrize("key, env_name, values, rendered", [
    ("eventsQps", "METAHOOK_EVENTS_QPS", [0.01, 2.5, 1e-05, 1000000], None),
    ("eventsBurst", "METAHOOK_EVENTS_BURST", [1, 25, 4294967295], ["1", "25", "4294967295"]),
    ("reconcileDebounceMs", "METAHOOK_RECONCILE_DEBOUNCE_MS", [0, 250, 60000], ["0", "250", "60000"]),
    ("statusSettleMs", "METAHOOK_STATUS_SETTLE_MS", [0, 1000, 30000], ["0", "1000", "30000"]),
    ("workers", "METAHOOK_DRIVER_WORKERS", [1, 20, 65535], ["1", "20", "65535"]),
])
def test_driver_event_budget_and_debounce_are_passed_only_when_set(
        driver: Rendered, chart: helm_python.Chart, key: str, env_name: str, values: list, rendered: list | None,
) -> None:
    """driver.eventsQps / eventsBurst / reconcileDebounceMs / statusSettleMs
    become --events-qps / --events-burst / --reconcile-debounce-ms /
    --status-settle-ms; unset (null), the binary's defaults hold."""
    assert env_name in binary_env_names()
    assert env_name not in driver.env()
    assert env_name not in render(chart, {"driver": {key: values[0]}}).env(), "metacontroller mode has no driver"
    for i, value in enumerate(values):
        env = render(chart, {"mode": "driver", "driver": {key: value}}).env()
        if rendered is None:
            # A float the binary's f64 parser reads back as the value.
            assert re.fullmatch(r"[0-9.e+-]+", env[env_name]), env[env_name]
            assert float(env[env_name]) == value
        else:
            assert env[env_name] == rendered[i]
    # Every shard gets them.
    sharded = render(chart, {"mode": "driver", "driver": {key: values[1], "shards": SHARDS}})
    assert len({d["metadata"]["name"] for d in sharded.all("Deployment")}) == len(SHARDS)
    for d in sharded.all("Deployment"):
        env = {e["name"]: e.get("value") for e in d["spec"]["template"]["spec"]["containers"][0]["env"]}
        assert float(env[env_name]) == values[1]


def test_driver_standby_is_passed_only_when_set(driver: Rendered, chart: helm_python.Chart) -> None:
    """driver.standby becomes --leader-election-standby, on every shard;
    unset, the binary's default (warm) holds; anything else is refused."""
    name = "METAHOOK_LEADER_ELECTION_STANDBY"
    assert name in binary_env_names()
    assert name not in driver.env()
    for value in ("warm", "cold"):
        sharded = render(chart, {"mode": "driver", "driver": {"standby": value, "shards": SHARDS}})
        for d in sharded.all("Deployment"):
            env = {e["name"]: e.get("value") for e in d["spec"]["template"]["spec"]["containers"][0]["env"]}
            assert env[name] == value
    with pytest.raises(helm_python.HelmError, match="standby"):
        render(chart, {"mode": "driver", "driver": {"standby": "lukewarm"}})


def test_driver_configmap_holds_the_enabled_manifests(driver: Rendered) -> None:
    """METAHOOK_CONTROLLERS is `--controllers DIR`: a directory of
    CompositeController *.yaml files. The chart fills it from
    metacontroller/<name>.yaml, the files the binary embeds, unchanged."""
    config_map = driver.one("ConfigMap")
    assert config_map["metadata"]["name"] == "metahook-controllers"
    assert controllers_config(driver) == {f"{name}.yaml": cc for name, cc in controller_manifests().items()}
    for name in CONTROLLERS:
        assert config_map["data"][f"{name}.yaml"] == (CHART / "metacontroller" / f"{name}.yaml").read_text()


def test_driver_configmap_follows_the_switches(chart: helm_python.Chart) -> None:
    enabled = CONTROLLERS[:2]
    values = {"mode": "driver", "controllers": {c: {"enabled": c in enabled} for c in CONTROLLERS}}
    assert sorted(controllers_config(render(chart, values))) == [f"{c}.yaml" for c in enabled]


def test_driver_pods_roll_when_the_manifests_change(chart: helm_python.Chart, driver: Rendered,
                                                    tmp_path: Path) -> None:
    def checksum(out: Rendered) -> str:
        return out.deployment["spec"]["template"]["metadata"]["annotations"]["checksum/controllers"]

    assert re.fullmatch(r"[0-9a-f]{64}", checksum(driver))
    # Unrelated values leave it alone; another set of controllers changes it.
    assert checksum(render(chart, {"mode": "driver", "replicas": 5, "podAnnotations": {"a": "b"}})) == checksum(driver)
    assert checksum(render(chart, only(CONTROLLERS[0], mode="driver"))) != checksum(driver)
    # So does an edit of a manifest.
    copy_dir = Path(chart.save_dir(tmp_path))
    manifest = copy_dir / "metacontroller" / f"{CONTROLLERS[0]}.yaml"
    manifest.write_text(manifest.read_text().replace("timeout: 10s", "timeout: 20s"))
    with helm_python.Chart.load(copy_dir) as modified:
        assert checksum(render(modified, {"mode": "driver"})) != checksum(driver)
    annotated = render(chart, {"mode": "driver", "podAnnotations": {"example.com/scrape": "true"}})
    assert annotated.deployment["spec"]["template"]["metadata"]["annotations"] == {
        "example.com/scrape": "true", "checksum/controllers": checksum(driver)}


def test_driver_pod_stays_hardened_with_its_volume(driver: Rendered) -> None:
    assert driver.container["securityContext"]["readOnlyRootFilesystem"] is True
    assert [v["name"] for v in driver.pod_spec["volumes"]] == ["controllers"]
    assert restricted_violations(driver.pod_spec) == []


@pytest.mark.parametrize("values", [{}, {"replicas": 3, "podDisruptionBudget": {"enabled": True, "maxUnavailable": 1}},
                                    {"podDisruptionBudget": {"minAvailable": "50%"}}],
                         ids=["default", "pdb-enabled", "min-available"])
def test_driver_rolls_out_by_recreate_without_a_budget(chart: helm_python.Chart, values: dict) -> None:
    """Only the Lease holder is ready. A surge pod would wait for the Lease
    the old leader holds (a RollingUpdate stalls), and a budget would count
    the leader as the only healthy pod and block draining its node."""
    out = render(chart, {**values, "mode": "driver"})
    assert out.deployment["spec"]["strategy"] == {"type": "Recreate"}
    assert not out.all("PodDisruptionBudget")
    metacontroller = render(chart, values)
    assert metacontroller.deployment["spec"]["strategy"]["type"] == "RollingUpdate"
    assert metacontroller.one("PodDisruptionBudget")



def test_driver_cluster_role_is_exactly_what_the_controllers_need(driver: Rendered) -> None:
    grants = cluster_role_grants(driver)
    assert grants == expected_driver_grants(CONTROLLERS)
    # Every parent of every controller, with its status and finalizers
    # subresources.
    for cc in controller_manifests().values():
        parent = cc["spec"]["parentResource"]
        assert (api_group(parent["apiVersion"]), parent["resource"] + "/status") in grants
        assert grants[(api_group(parent["apiVersion"]), parent["resource"] + "/finalizers")] == {"update"}
    for (group, resource), verbs in grants.items():
        assert "*" not in group and "*" not in resource and "*" not in verbs


def test_driver_bindings_and_lease_role(driver: Rendered, chart: helm_python.Chart) -> None:
    account = driver.one("ServiceAccount")["metadata"]["name"]
    subject = [{"kind": "ServiceAccount", "name": account, "namespace": DEFAULT_NAMESPACE}]
    binding = driver.one("ClusterRoleBinding")
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                  "name": driver.one("ClusterRole")["metadata"]["name"]}
    assert binding["subjects"] == subject
    role = driver.one("Role")
    # What driver/src/start/leader/ calls: it gets the Lease, creates it when
    # missing, and updates it (guarded by the resourceVersion read) to
    # acquire, renew and release; a standby lists and watches that one
    # Lease (by name) to see it released. Never a patch, nor any other
    # Lease.
    assert role["rules"] == [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": ["metahook"],
         "verbs": ["get", "list", "watch", "update"]},
    ]
    role_binding = driver.one("RoleBinding")
    assert role_binding["roleRef"]["name"] == role["metadata"]["name"]
    assert role_binding["subjects"] == subject
    renamed = render(chart, {"mode": "driver", "driver": {"leaseName": "leader"}})
    assert renamed.one("Role")["rules"][1]["resourceNames"] == ["leader"]
    assert renamed.env()["METAHOOK_LEADER_ELECTION_LEASE"] == "leader"
    assert renamed.one("Lease")["metadata"]["name"] == "leader"


def test_driver_lease_belongs_to_the_release(driver: Rendered, default: Rendered) -> None:
    """Found on the real node (tests/chart/test_install.py): the Lease the
    driver created at its first start outlived `helm uninstall`. The chart
    renders it, so Helm deletes it; with no spec field, so that Helm and
    the driver (which updates holderIdentity, renewTime...) never write the
    same field."""
    lease = driver.one("Lease")
    assert lease["apiVersion"] == "coordination.k8s.io/v1"
    assert lease["metadata"]["name"] == driver.env()["METAHOOK_LEADER_ELECTION_LEASE"]
    assert lease["metadata"]["namespace"] == DEFAULT_NAMESPACE
    assert lease["metadata"]["labels"] == expected_labels()
    assert lease["spec"] == {}
    assert default.all("Lease") == []


def test_driver_network_policy_admits_scrapers_only(driver: Rendered) -> None:
    policy = driver.one("NetworkPolicy")["spec"]
    assert policy["policyTypes"] == ["Ingress"]  # the driver must reach the API server
    [metrics] = policy["ingress"]
    assert metrics["from"] == [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]


def test_driver_rbac_can_be_left_to_the_user(chart: helm_python.Chart) -> None:
    out = render(chart, {"mode": "driver", "rbac": {"create": False},
                         "serviceAccount": {"create": False, "name": "existing"}})
    for kind in ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ServiceAccount"):
        assert not out.all(kind), kind
    assert out.pod_spec["serviceAccountName"] == "existing"
    assert out.pod_spec["automountServiceAccountToken"] is True


def test_driver_extra_rules_are_appended(chart: helm_python.Chart) -> None:
    extra = {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}
    out = render(chart, {"mode": "driver", "rbac": {"create": True, "extraClusterRoleRules": [extra]}})
    assert out.one("ClusterRole")["rules"][-1] == extra


def test_existing_service_account_needs_a_name(chart: helm_python.Chart) -> None:
    with pytest.raises(helm_python.HelmError, match="serviceAccount.name is required"):
        render(chart, {"serviceAccount": {"create": False}})


# --------------------------------------------------------------------------
# The driver's aggregated API (driver.aggregatedApi, driver mode only)


API_SERVICE = "v1alpha1.driver.metahook.dev"
API_TLS_DIR = "/etc/metahook/api-tls"
API_ENV = ("METAHOOK_API_LISTEN", "METAHOOK_API_TLS_DIR")


def is_auth_reader_binding(obj: dict) -> bool:
    return obj["kind"] == "RoleBinding" and obj["roleRef"]["name"] == "extension-apiserver-authentication-reader"


@pytest.fixture(scope="module")
def api(chart: helm_python.Chart) -> Rendered:
    return render(chart, aggregated_api())


@pytest.fixture(scope="module")
def api_cert_manager(chart: helm_python.Chart) -> Rendered:
    return render(chart, aggregated_api(certManager=CERT_MANAGER))


def api_tls_secret_name(out: Rendered) -> str:
    """The Secret the pod mounts at METAHOOK_API_TLS_DIR, after checking the
    mount."""
    [volume] = [v for v in out.pod_spec["volumes"] if v["name"] == "api-tls"]
    [mount] = [m for m in out.container["volumeMounts"] if m["name"] == "api-tls"]
    assert mount == {"name": "api-tls", "mountPath": API_TLS_DIR, "readOnly": True}
    assert out.env()["METAHOOK_API_TLS_DIR"] == API_TLS_DIR
    return volume["secret"]["secretName"]


def service_dns_names(out: Rendered) -> list[str]:
    """The names kube-apiserver may dial the APIService's Service by."""
    service = out.one("Service")["metadata"]
    svc = f"{service['name']}.{service['namespace']}.svc"
    return [svc, f"{svc}.cluster.local"]


def openssl(*args: str) -> str:
    result = subprocess.run(["openssl", *args], capture_output=True, text=True)
    assert result.returncode == 0, f"openssl {' '.join(args)}: {result.stderr}"
    return result.stdout


def verify(ca: Path, cert: Path, hostname: str) -> subprocess.CompletedProcess:
    """openssl's verdict on `cert` as a TLS server `hostname` under `ca`."""
    return subprocess.run(["openssl", "verify", "-CAfile", str(ca), "-purpose", "sslserver",
                           "-verify_hostname", hostname, str(cert)], capture_output=True, text=True)


def write_pems(out: Rendered, tmp_path: Path) -> dict[str, Path]:
    """The chart's Secret's ca.crt, tls.crt and tls.key, and the APIService's
    caBundle, as PEM files."""
    secret = out.one("Secret", api_tls_secret_name(out))
    paths = {}
    for key, b64 in {**secret["data"], "caBundle": out.one("APIService")["spec"]["caBundle"]}.items():
        pem = base64.b64decode(b64, validate=True)
        assert pem.startswith(b"-----BEGIN "), key
        paths[key] = tmp_path / key
        paths[key].write_bytes(pem)
    return paths


def validity_days(cert: Path) -> float:
    dates = dict(line.split("=", 1) for line in openssl("x509", "-noout", "-dates", "-in", str(cert)).splitlines())
    parse = lambda text: datetime.strptime(text, "%b %d %H:%M:%S %Y %Z")  # noqa: E731
    return (parse(dates["notAfter"]) - parse(dates["notBefore"])).total_seconds() / 86400


def test_aggregated_api_is_off_by_default(chart: helm_python.Chart, driver: Rendered) -> None:
    """Opt-in: while an APIService is unavailable, namespaces cannot be
    deleted and discovery stalls, cluster-wide."""
    assert chart.values["driver"]["aggregatedApi"]["enabled"] is False
    for kind in ("APIService", "Secret", "Certificate", "Issuer"):
        assert not driver.all(kind), kind
    assert [p["name"] for p in driver.one("Service")["spec"]["ports"]] == ["http"]
    assert [p["name"] for p in driver.container["ports"]] == ["http"]
    assert not set(API_ENV) & set(driver.env())
    assert [v["name"] for v in driver.pod_spec["volumes"]] == ["controllers"]
    assert [b["roleRef"]["name"] for b in driver.all("ClusterRoleBinding")] == ["metahook"]
    assert [b["roleRef"]["name"] for b in driver.all("RoleBinding")] == ["metahook-leader-election"]
    assert len(driver.one("NetworkPolicy")["spec"]["ingress"]) == 1
    assert "reconciles" not in driver.notes


@pytest.mark.parametrize("settings", [{}, {"certManager": CERT_MANAGER}], ids=["helm-certificate", "cert-manager"])
def test_metacontroller_mode_ignores_the_aggregated_api(chart: helm_python.Chart, default: Rendered,
                                                        settings: dict) -> None:
    """Like every driver.* value: the switch is ignored, not refused, so one
    values file can serve both modes. Nothing of it renders."""
    out = render(chart, aggregated_api(mode="metacontroller", **settings))
    assert out.objects == default.objects
    assert out.notes == default.notes


def test_aggregated_api_objects(api: Rendered, driver: Rendered) -> None:
    assert api.kinds() == sorted(driver.kinds() + ["APIService", "ClusterRole", "ClusterRoleBinding",
                                                   "RoleBinding", "Secret"])
    apiservice = api.one("APIService")
    assert apiservice["metadata"]["name"] == API_SERVICE
    assert "annotations" not in apiservice["metadata"]
    spec = dict(apiservice["spec"])
    assert re.fullmatch(r"[A-Za-z0-9+/]+=*", spec.pop("caBundle"))
    assert spec == {"group": "driver.metahook.dev", "version": "v1alpha1", "groupPriorityMinimum": 1000,
                    "versionPriority": 15, "service": {"name": "metahook", "namespace": "metahook", "port": 443}}


def test_aggregated_api_service_pod_and_apiservice_agree(api: Rendered) -> None:
    """APIService -> Service port api -> container port api, where the
    driver listens."""
    service = api.one("Service")
    target = api.one("APIService")["spec"]["service"]
    assert (target["name"], target["namespace"]) == (service["metadata"]["name"], service["metadata"]["namespace"])
    [port] = [p for p in service["spec"]["ports"] if p["port"] == target["port"]]
    assert port == {"name": "api", "port": 443, "targetPort": "api", "protocol": "TCP"}
    assert service["spec"]["ports"][0]["name"] == "http"
    assert api.container["ports"] == [{"name": "http", "containerPort": 8080, "protocol": "TCP"},
                                      {"name": "api", "containerPort": 8443, "protocol": "TCP"}]
    env = api.env()
    assert env["METAHOOK_API_LISTEN"] == "0.0.0.0:8443"
    assert env["METAHOOK_LISTEN"] == "0.0.0.0:8080"
    # The pod's readiness stays the hooks port's /readyz (the Lease holder).
    assert api.container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}


def test_aggregated_api_mounts_the_certificate_read_only(api: Rendered) -> None:
    secret = api.one("Secret")
    assert api_tls_secret_name(api) == secret["metadata"]["name"] == "metahook-api-tls"
    [volume] = [v for v in api.pod_spec["volumes"] if v["name"] == "api-tls"]
    # 0440 with the pod's fsGroup: the key is not world-readable.
    assert volume["secret"]["defaultMode"] == 0o440
    assert api.pod_spec["securityContext"]["fsGroup"] == 65532
    assert restricted_violations(api.pod_spec) == []
    # The driver re-reads a renewed certificate: nothing rolls the pods for it.
    assert set(api.deployment["spec"]["template"]["metadata"]["annotations"]) == {"checksum/controllers"}


def test_aggregated_api_without_fs_group_keeps_the_default_mode(chart: helm_python.Chart) -> None:
    """Without fsGroup the files are root's: 0440 would lock the process out."""
    out = render(chart, aggregated_api({"podSecurityContext": {"fsGroup": None}}))
    [volume] = [v for v in out.pod_spec["volumes"] if v["name"] == "api-tls"]
    assert volume["secret"] == {"secretName": "metahook-api-tls"}


def test_aggregated_api_listens_on_the_server_host(chart: helm_python.Chart) -> None:
    """server.host, bracketed when IPv6 ("::" on IPv6-only clusters)."""
    env = render(chart, aggregated_api({"server": {"host": "::"}})).env()
    assert (env["METAHOOK_LISTEN"], env["METAHOOK_API_LISTEN"]) == ("[::]:8080", "[::]:8443")
    env = render(chart, aggregated_api({"server": {"host": "10.0.0.1"}}, port=9443)).env()
    assert env["METAHOOK_API_LISTEN"] == "10.0.0.1:9443"


def test_aggregated_api_env_names_are_the_ones_the_binary_reads() -> None:
    missing = set(API_ENV) - binary_env_names()
    assert not missing, f"the command line (metahook/src/cli*) does not read {sorted(missing)}, which the chart sets"


def test_aggregated_api_certificate_is_signed_by_the_ca_bundle(api: Rendered, tmp_path: Path) -> None:
    """What kube-apiserver checks: the certificate the pod serves chains to
    the APIService's caBundle and names the Service's DNS name."""
    secret = api.one("Secret")
    assert secret["type"] == "kubernetes.io/tls"
    assert set(secret["data"]) == {"ca.crt", "tls.crt", "tls.key"}
    pems = write_pems(api, tmp_path)
    assert pems["caBundle"].read_bytes() == pems["ca.crt"].read_bytes()
    assert "CA:TRUE" in openssl("x509", "-noout", "-ext", "basicConstraints", "-in", str(pems["caBundle"]))
    names = service_dns_names(api)
    assert names == ["metahook.metahook.svc", "metahook.metahook.svc.cluster.local"]
    for name in names:
        result = verify(pems["caBundle"], pems["tls.crt"], name)
        assert result.returncode == 0 and ": OK" in result.stdout, result.stderr
    # Not vacuous: another name, or another CA, fails.
    assert verify(pems["caBundle"], pems["tls.crt"], "metahook.other.svc").returncode != 0
    assert verify(pems["tls.crt"], pems["tls.crt"], names[0]).returncode != 0
    sans = openssl("x509", "-noout", "-ext", "subjectAltName", "-in", str(pems["tls.crt"]))
    assert re.findall(r"DNS:([^,\s]+)", sans) == names
    subject = openssl("x509", "-noout", "-subject", "-nameopt", "oneline", "-in", str(pems["tls.crt"]))
    assert f"CN = {names[0]}" in subject
    # The key is the certificate's.
    assert (openssl("pkey", "-pubout", "-in", str(pems["tls.key"]))
            == openssl("x509", "-noout", "-pubkey", "-in", str(pems["tls.crt"])))
    assert round(validity_days(pems["tls.crt"])) == 3650
    assert round(validity_days(pems["caBundle"])) == 3650


def test_aggregated_api_certificate_follows_release_namespace_and_validity(chart: helm_python.Chart,
                                                                         tmp_path: Path) -> None:
    out = render(chart, aggregated_api({"namespaceOverride": "elsewhere"}, certValidityDays=30),
                 release="hooks-prod", namespace="platform-hooks")
    pems = write_pems(out, tmp_path)
    names = service_dns_names(out)
    assert names == ["hooks-prod-metahook.elsewhere.svc", "hooks-prod-metahook.elsewhere.svc.cluster.local"]
    assert out.one("APIService")["spec"]["service"] == {"name": "hooks-prod-metahook", "namespace": "elsewhere",
                                                         "port": 443}
    assert verify(pems["caBundle"], pems["tls.crt"], names[0]).returncode == 0
    assert verify(pems["caBundle"], pems["tls.crt"], "metahook.metahook.svc").returncode != 0
    assert round(validity_days(pems["tls.crt"])) == 30


def test_offline_renders_generate_a_new_certificate_each_time(chart: helm_python.Chart, api: Rendered) -> None:
    """`lookup` answers nothing offline (helm template, client-side dry
    runs), so every such render makes a new CA and certificate."""
    again = render(chart, aggregated_api())
    assert again.one("Secret")["data"]["ca.crt"] != api.one("Secret")["data"]["ca.crt"]
    assert again.one("APIService")["spec"]["caBundle"] == again.one("Secret")["data"]["ca.crt"]


LOOKUP = 'lookup "v1" "Secret" $namespace $secretName'


@pytest.mark.parametrize("existing, reused", [
    ({"ca.crt": "Q0E=", "tls.crt": "Q0VSVA==", "tls.key": "S0VZ", "extra": "eA=="}, True),
    ({"ca.crt": "Q0E=", "tls.crt": "Q0VSVA=="}, False),
    ({}, False),
], ids=["complete", "no-key", "empty"])
def test_upgrade_reuses_the_secrets_certificate(chart: helm_python.Chart, tmp_path: Path, existing: dict,
                                               reused: bool) -> None:
    """On a cluster, `lookup` returns the release's Secret: its CA and
    certificate are kept (an upgrade must not leave the caBundle and the
    served certificate disagreeing), unless one of the three is missing.
    Offline Helm cannot answer a lookup, so a copy of the chart has the
    Secret's answer in its place."""
    copy_dir = Path(chart.save_dir(tmp_path))
    template = copy_dir / "templates" / "aggregated-api.yaml"
    text = template.read_text()
    assert text.count(LOOKUP) == 1, "the template looks up the Secret it renders"
    # What lookup returns: the object, or an empty map when there is none.
    answer = "(dict)"
    if existing:
        data = " ".join(f'"{k}" "{v}"' for k, v in existing.items())
        answer = f'(dict "kind" "Secret" "data" (dict {data}))'
    template.write_text(text.replace(LOOKUP, answer))
    with helm_python.Chart.load(copy_dir) as modified:
        out = render(modified, aggregated_api())
    secret, bundle = out.one("Secret", "metahook-api-tls")["data"], out.one("APIService")["spec"]["caBundle"]
    if reused:
        assert secret == {k: existing[k] for k in ("ca.crt", "tls.crt", "tls.key")}
        assert bundle == "Q0E="
    else:
        assert secret["ca.crt"] not in (existing.get("ca.crt"), None)
        assert secret["tls.crt"] != existing.get("tls.crt")
        assert bundle == secret["ca.crt"]


def test_aggregated_api_rbac(api: Rendered, chart: helm_python.Chart) -> None:
    subject = [{"kind": "ServiceAccount", "name": "metahook", "namespace": DEFAULT_NAMESPACE}]
    [delegator] = [b for b in api.all("ClusterRoleBinding") if b["roleRef"]["name"] == "system:auth-delegator"]
    assert delegator["metadata"]["name"] == "metahook-auth-delegator"
    assert delegator["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                    "name": "system:auth-delegator"}
    assert delegator["subjects"] == subject
    [reader] = [b for b in api.all("RoleBinding") if is_auth_reader_binding(b)]
    assert reader["metadata"]["namespace"] == "kube-system"
    assert reader["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                 "name": "extension-apiserver-authentication-reader"}
    assert reader["subjects"] == subject
    assert reader["subjects"][0]["name"] == api.pod_spec["serviceAccountName"]
    role = api.one("ClusterRole", "metahook-reconciles-reader")
    assert role["rules"] == [{"apiGroups": ["driver.metahook.dev"], "resources": ["reconciles"],
                              "verbs": ["get", "list", "watch"]}]
    assert role["metadata"]["labels"] == {**expected_labels(),
                                          "rbac.authorization.k8s.io/aggregate-to-view": "true"}
    # Bound to nobody: it only feeds view (and so edit and admin).
    for binding in api.all("ClusterRoleBinding") + api.all("RoleBinding"):
        assert binding["roleRef"]["name"] != role["metadata"]["name"]
    # The driver's own ClusterRole is unchanged.
    assert cluster_role_grants_of(api.one("ClusterRole", "metahook")) == expected_driver_grants(CONTROLLERS)
    unaggregated = render(chart, aggregated_api(aggregateToView=False))
    assert unaggregated.one("ClusterRole", "metahook-reconciles-reader")["metadata"]["labels"] == expected_labels()


def test_aggregated_api_rbac_binds_an_existing_service_account_or_is_left_to_the_user(
        chart: helm_python.Chart) -> None:
    existing = render(chart, aggregated_api({"serviceAccount": {"create": False, "name": "existing"}}),
                      namespace="ops")
    for binding in existing.all("ClusterRoleBinding") + existing.all("RoleBinding"):
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "existing", "namespace": "ops"}]
    assert any(is_auth_reader_binding(b) for b in existing.all("RoleBinding"))
    none = render(chart, aggregated_api({"rbac": {"create": False}}))
    for kind in ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"):
        assert not none.all(kind), kind
    assert none.one("APIService") and none.one("Secret")


def test_aggregated_api_port_is_open_to_kube_apiserver(api: Rendered, chart: helm_python.Chart) -> None:
    """kube-apiserver's source address is unknowable here: the API port is
    admitted from anywhere; the hooks port keeps its rules."""
    policy = api.one("NetworkPolicy")["spec"]
    assert policy["policyTypes"] == ["Ingress"]
    open_rule, metrics = policy["ingress"]
    assert open_rule == {"ports": [{"port": "api", "protocol": "TCP"}]}
    assert metrics["ports"] == [{"port": "http", "protocol": "TCP"}] and metrics["from"]
    assert not render(chart, aggregated_api({"networkPolicy": {"enabled": False}})).all("NetworkPolicy")


def test_aggregated_api_port_can_be_narrowed_to_the_control_plane(chart: helm_python.Chart) -> None:
    control_plane = [{"ipBlock": {"cidr": "10.0.0.0/28"}}, {"ipBlock": {"cidr": "192.168.5.7/32"}}]
    policy = render(chart, aggregated_api({"networkPolicy": {"apiFrom": control_plane}})).one("NetworkPolicy")
    api_rule, metrics = policy["spec"]["ingress"]
    assert api_rule == {"ports": [{"port": "api", "protocol": "TCP"}], "from": control_plane}
    assert metrics["ports"] == [{"port": "http", "protocol": "TCP"}]
    # Without the aggregated API the value changes nothing.
    assert render(chart, {"mode": "driver", "networkPolicy": {"apiFrom": control_plane}}).one(
        "NetworkPolicy") == render(chart, {"mode": "driver"}).one("NetworkPolicy")
    with pytest.raises(helm_python.HelmError, match="apiFrom"):
        render(chart, aggregated_api({"networkPolicy": {"apiFrom": [{}]}}))


def test_aggregated_api_knobs(chart: helm_python.Chart) -> None:
    out = render(chart, aggregated_api(port=9443, servicePort=8443, groupPriorityMinimum=2000,
                                       versionPriority=20))
    spec = out.one("APIService")["spec"]
    assert (spec["groupPriorityMinimum"], spec["versionPriority"], spec["service"]["port"]) == (2000, 20, 8443)
    assert {"name": "api", "port": 8443, "targetPort": "api", "protocol": "TCP"} in out.one("Service")["spec"]["ports"]
    assert {"name": "api", "containerPort": 9443, "protocol": "TCP"} in out.container["ports"]
    assert out.env()["METAHOOK_API_LISTEN"] == "0.0.0.0:9443"


@pytest.mark.parametrize("settings, issued_by", [({}, "Secret"), ({"certManager": CERT_MANAGER}, "Certificate")],
                         ids=["helm-certificate", "cert-manager"])
def test_insecure_skip_tls_verify_drops_the_ca_bundle(chart: helm_python.Chart, settings: dict,
                                                      issued_by: str) -> None:
    out = render(chart, aggregated_api(insecureSkipTLSVerify=True, **settings))
    apiservice = out.one("APIService")
    assert apiservice["spec"]["insecureSkipTLSVerify"] is True
    assert "caBundle" not in apiservice["spec"]
    assert "annotations" not in apiservice["metadata"]
    # The driver still serves TLS: the certificate is still made and mounted.
    assert out.one(issued_by, "metahook-api-tls")
    assert api_tls_secret_name(out) == "metahook-api-tls"
    assert chart.values["driver"]["aggregatedApi"]["insecureSkipTLSVerify"] is False


def test_cert_manager_issues_the_certificate(api_cert_manager: Rendered, driver: Rendered) -> None:
    out = api_cert_manager
    assert not out.all("Secret"), "cert-manager writes the Secret, not Helm"
    assert out.kinds() == sorted(driver.kinds() + ["APIService", "Certificate", "ClusterRole",
                                                   "ClusterRoleBinding", "Issuer", "RoleBinding"])
    certificate, issuer = out.one("Certificate"), out.one("Issuer")
    assert certificate["metadata"]["name"] == "metahook-api-tls"
    assert certificate["spec"] == {
        "secretName": api_tls_secret_name(out),
        "dnsNames": service_dns_names(out),
        "duration": "2160h",
        "usages": ["digital signature", "key encipherment", "server auth"],
        "issuerRef": {"name": issuer["metadata"]["name"], "kind": "Issuer", "group": "cert-manager.io"},
    }
    assert certificate["spec"]["secretName"] == "metahook-api-tls"
    assert issuer["metadata"] == {"name": "metahook-api-selfsigned", "namespace": DEFAULT_NAMESPACE,
                                  "labels": expected_labels()}
    assert issuer["spec"] == {"selfSigned": {}}
    apiservice = out.one("APIService")
    assert "caBundle" not in apiservice["spec"] and "insecureSkipTLSVerify" not in apiservice["spec"]
    assert apiservice["metadata"]["annotations"] == {
        "cert-manager.io/inject-ca-from": f"{DEFAULT_NAMESPACE}/{certificate['metadata']['name']}"}


def test_cert_manager_with_an_issuer_of_ones_own(chart: helm_python.Chart) -> None:
    out = render(chart, aggregated_api({"commonAnnotations": {"example.com/owner": "platform"}}, certManager={
        "enabled": True, "issuerRef": {"name": "platform-ca", "kind": "ClusterIssuer"}, "duration": "720h"}),
                 namespace="ops")
    assert not out.all("Issuer") and not out.all("Secret")
    spec = out.one("Certificate")["spec"]
    assert spec["issuerRef"] == {"name": "platform-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"}
    assert spec["duration"] == "720h"
    assert spec["dnsNames"] == ["metahook.ops.svc", "metahook.ops.svc.cluster.local"]
    assert out.one("APIService")["metadata"]["annotations"] == {
        "cert-manager.io/inject-ca-from": "ops/metahook-api-tls", "example.com/owner": "platform"}
    external = render(chart, aggregated_api(certManager={
        "enabled": True, "issuerRef": {"name": "vault", "kind": "VaultIssuer", "group": "example.com"}}))
    assert external.one("Certificate")["spec"]["issuerRef"] == {"name": "vault", "kind": "VaultIssuer",
                                                                "group": "example.com"}


def test_cert_manager_schemas_catch_mistakes(api_cert_manager: Rendered) -> None:
    """tests/chart/schemas/ for cert-manager are not vacuous."""
    good = {kind: api_cert_manager.one(kind) for kind in ("Certificate", "Issuer")}
    mistakes = {
        "Certificate": {
            "no secretName": lambda c: c["spec"].pop("secretName"),
            "no issuer": lambda c: c["spec"].pop("issuerRef"),
            "unknown field": lambda c: c["spec"].update(dnsName="x"),
            "bad usage": lambda c: c["spec"]["usages"].append("serving"),
            "bad duration": lambda c: c["spec"].update(duration="90d"),
            "upper-case DNS name": lambda c: c["spec"]["dnsNames"].append("Metahook.svc"),
        },
        "Issuer": {
            "two types": lambda i: i["spec"].update(ca={"secretName": "x"}),
            "no type": lambda i: i["spec"].pop("selfSigned"),
            "no namespace": lambda i: i["metadata"].pop("namespace"),
        },
    }
    for kind, cases in mistakes.items():
        schema = CUSTOM_SCHEMAS[("cert-manager.io/v1", kind)]
        assert schema_errors(schema, good[kind]) == []
        for what, mutate in cases.items():
            bad = copy.deepcopy(good[kind])
            mutate(bad)
            assert schema_errors(schema, bad), f"{kind} schema accepted: {what}"


def test_notes_point_at_the_reconciles(api: Rendered, api_cert_manager: Rendered) -> None:
    for out in (api, api_cert_manager):
        assert "kubectl get reconciles -A" in out.notes
        assert f"kubectl get apiservice {API_SERVICE}" in out.notes


@pytest.mark.parametrize("settings, message", [
    ({"port": 8080}, r"driver.aggregatedApi.port \(8080\) must differ from server.port"),
    ({"servicePort": 80}, r"driver.aggregatedApi.servicePort \(80\) must differ from service.port"),
], ids=["container-port-clash", "service-port-clash"])
def test_aggregated_api_ports_must_not_clash(chart: helm_python.Chart, settings: dict, message: str) -> None:
    with pytest.raises(helm_python.HelmError, match=message):
        render(chart, aggregated_api(**settings))


# --------------------------------------------------------------------------
# Release name, namespace and name overrides


def test_custom_release_name_and_namespace(chart: helm_python.Chart) -> None:
    out = render(chart, {"mode": "driver"}, release="hooks-prod", namespace="platform-hooks")
    fullname = "hooks-prod-metahook"
    for obj in out.objects:
        name = obj["metadata"]["name"]
        if obj["kind"] == "CustomResourceDefinition":
            continue  # named by its API: <plural>.<group>
        assert name.startswith(fullname), f"{obj['kind']} {name}"
        assert obj["metadata"]["labels"] == expected_labels("hooks-prod"), obj["kind"]
    assert out.deployment["spec"]["selector"]["matchLabels"]["app.kubernetes.io/instance"] == "hooks-prod"
    for binding in out.all("ClusterRoleBinding") + out.all("RoleBinding"):
        assert binding["subjects"][0]["namespace"] == "platform-hooks"
    assert out.env()["METAHOOK_LEADER_ELECTION_LEASE"] == fullname
    assert "namespace platform-hooks" in out.notes


def test_release_name_containing_the_chart_name_is_not_repeated(chart: helm_python.Chart) -> None:
    out = render(chart, release="metahook-staging")
    assert out.deployment["metadata"]["name"] == "metahook-staging"


def test_name_overrides(chart: helm_python.Chart) -> None:
    out = render(chart, {"nameOverride": "hookd", "namespaceOverride": "elsewhere"}, release="r1")
    assert out.deployment["metadata"]["name"] == "r1-hookd"
    assert out.deployment["metadata"]["namespace"] == "elsewhere"
    assert out.deployment["spec"]["selector"]["matchLabels"]["app.kubernetes.io/name"] == "hookd"
    for cc in out.all("CompositeController"):
        for hook in cc["spec"]["hooks"].values():
            assert hook["webhook"]["service"] == {"name": "r1-hookd", "namespace": "elsewhere", "port": 80}
    full = render(chart, {"fullnameOverride": "hooks"})
    named = {o["metadata"]["name"] for o in full.objects if o["kind"] not in {"CompositeController", "CustomResourceDefinition"}}
    assert named == {"hooks"}


def test_names_are_truncated_to_63_characters(chart: helm_python.Chart) -> None:
    release = "a" * 53  # the longest release name Helm accepts
    helm_python.validate_release_name(release)
    out = render(chart, {"mode": "driver"}, release=release)
    names = {o["metadata"]["name"] for o in out.objects}
    assert all(len(n) <= 63 and not n.endswith("-") for n in names), names
    assert out.deployment["metadata"]["name"] == (release + "-metahook")[:63]
    # Sharded too: each shard's Deployment keeps the shard's name whole.
    sharded = render(chart, {"mode": "driver", "driver": {"shards": SHARDS}}, release=release)
    deployments = sorted(d["metadata"]["name"] for d in sharded.all("Deployment"))
    assert deployments == sorted((release + "-metahook")[:62 - len(s["name"])] + f"-{s['name']}" for s in SHARDS)
    names = {o["metadata"]["name"] for o in sharded.objects}
    assert all(len(n) <= 63 and not n.endswith("-") for n in names), names


# --------------------------------------------------------------------------
# Overrides of the hardened defaults and other knobs


def test_hardened_settings_can_be_overridden(chart: helm_python.Chart) -> None:
    out = render(chart, {"podSecurityContext": {"runAsUser": 1000, "runAsGroup": 1000, "fsGroup": 1000},
                         "securityContext": {"runAsUser": 1000, "readOnlyRootFilesystem": False}})
    pod_ctx, ctx = out.pod_spec["securityContext"], out.container["securityContext"]
    assert (pod_ctx["runAsUser"], pod_ctx["runAsGroup"], pod_ctx["fsGroup"]) == (1000, 1000, 1000)
    assert ctx["runAsUser"] == 1000 and ctx["readOnlyRootFilesystem"] is False
    # Untouched keys keep their hardened defaults.
    assert ctx["capabilities"] == {"drop": ["ALL"]} and ctx["allowPrivilegeEscalation"] is False
    assert pod_ctx["seccompProfile"] == {"type": "RuntimeDefault"}


def test_pinned_ids_can_be_removed(chart: helm_python.Chart) -> None:
    out = render(chart, UNPINNED_IDS)
    pod_ctx, ctx = out.pod_spec["securityContext"], out.container["securityContext"]
    for key in ("runAsUser", "runAsGroup", "fsGroup"):
        assert key not in pod_ctx and key not in ctx, key
    assert pod_ctx["runAsNonRoot"] is True and ctx["readOnlyRootFilesystem"] is True


def test_everything_is_passed_through(chart: helm_python.Chart) -> None:
    out = render(chart, EVERYTHING)
    pod, container, env = out.pod_spec, out.container, out.env()
    assert out.deployment["spec"]["replicas"] == 3
    assert container["image"] == "registry.example.com/platform/metahook:1.2.3"
    assert container["imagePullPolicy"] == "Always"
    assert pod["imagePullSecrets"] == [{"name": "regcred"}]
    assert container["args"] == ["serve", "--log-format=text"]
    assert env["RUST_LOG"] == "debug"
    assert (env["METAHOOK_LISTEN"], env["METAHOOK_MAX_BODY_BYTES"], env["METAHOOK_MAX_BUFFERED_BYTES"],
            env["METAHOOK_MAX_IN_FLIGHT"], env["METAHOOK_REQUEST_TIMEOUT_SECONDS"],
            env["METAHOOK_SHUTDOWN_TIMEOUT_SECONDS"], env["METAHOOK_WORKERS"], env["METAHOOK_LOG_FORMAT"]) == (
        "0.0.0.0:9090", "1048576", "8388608", "64", "5", "20", "2", "text")
    assert container["ports"][0]["containerPort"] == 9090
    assert out.one("Service")["spec"]["ports"][0] == {"name": "http", "port": 8081, "targetPort": "http",
                                                      "protocol": "TCP"}
    assert out.one("Service")["metadata"]["annotations"] == {"example.com/service": "yes",
                                                             "example.com/owner": "platform@example.com"}
    assert out.one("ServiceAccount")["metadata"]["annotations"]["example.com/sa"] == "yes"
    assert pod["priorityClassName"] == "system-cluster-critical"
    assert pod["nodeSelector"] == EVERYTHING["nodeSelector"]
    assert pod["tolerations"] == EVERYTHING["tolerations"]
    assert pod["affinity"] == EVERYTHING["affinity"]
    assert pod["terminationGracePeriodSeconds"] == 60
    assert container["lifecycle"]["preStop"]["sleep"]["seconds"] == 3
    assert container["livenessProbe"]["periodSeconds"] == 20
    assert container["readinessProbe"]["periodSeconds"] == 3
    template_meta = out.deployment["spec"]["template"]["metadata"]
    assert template_meta["labels"]["example.com/pod"] == "yes"
    assert template_meta["annotations"] == {"example.com/scrape": "true"}
    assert out.one("PodDisruptionBudget")["spec"]["minAvailable"] == "50%"
    for obj in out.objects:
        assert obj["metadata"]["labels"]["example.com/team"] == "platform", obj["kind"]
        assert obj["metadata"]["annotations"]["example.com/owner"] == "platform@example.com", obj["kind"]


def test_extra_labels_cannot_break_the_selector(chart: helm_python.Chart) -> None:
    hijack = {"app.kubernetes.io/name": "other", "app.kubernetes.io/instance": "other"}
    out = render(chart, {"podLabels": hijack, "commonLabels": hijack})
    selector = out.deployment["spec"]["selector"]["matchLabels"]
    assert selector == {"app.kubernetes.io/name": "metahook", "app.kubernetes.io/instance": "metahook"}
    assert out.deployment["spec"]["template"]["metadata"]["labels"] == selector
    assert out.one("Service")["metadata"]["labels"]["app.kubernetes.io/name"] == "metahook"


def test_listen_address_brackets_ipv6(chart: helm_python.Chart) -> None:
    assert render(chart, {"server": {"host": "::"}}).env()["METAHOOK_LISTEN"] == "[::]:8080"
    assert render(chart, {"server": {"host": "10.0.0.1", "port": 9000}}).env()["METAHOOK_LISTEN"] == "10.0.0.1:9000"


def test_image_digest_wins_over_tag(chart: helm_python.Chart) -> None:
    digest = "sha256:" + "0123456789abcdef" * 4
    out = render(chart, {"image": {"tag": "9.9.9", "digest": digest}})
    assert out.container["image"] == f"ghcr.io/metahook/metahook@{digest}"


def test_single_replica_without_spread_pdb_or_policy(chart: helm_python.Chart) -> None:
    out = render(chart, {"replicas": 1, "podDisruptionBudget": {"enabled": False},
                         "networkPolicy": {"enabled": False}, "topologySpreadConstraints": []})
    assert out.deployment["spec"]["replicas"] == 1
    assert "topologySpreadConstraints" not in out.pod_spec
    assert not out.all("PodDisruptionBudget") and not out.all("NetworkPolicy")


# --------------------------------------------------------------------------
# Malformed values are rejected, with a message naming the problem


MALFORMED = [
    ("unknown mode", {"mode": "operator"}, r"/mode.*metacontroller.*driver"),
    ("negative replicas", {"replicas": -1}, r"/replicas.*minimum"),
    ("zero replicas", {"replicas": 0}, r"/replicas.*minimum"),
    ("replicas as a string", {"replicas": "two"}, r"/replicas.*got string, want null or integer"),
    ("fractional replicas", {"replicas": 1.5}, r"/replicas.*want null or integer"),
    ("unknown top-level key", {"replica": 3}, r"additional properties 'replica' not allowed"),
    ("misspelt controller", {"controllers": {"helo": {"enabled": False}}}, r"/controllers.*'helo' not allowed"),
    ("switch as a string", {"controllers": {"hello": {"enabled": "yes"}}}, r"/controllers/hello/enabled.*want boolean"),
    ("tag as a number", {"image": {"tag": 1.0}}, r"/image/tag.*got number, want string"),
    ("bad pull policy", {"image": {"pullPolicy": "Sometimes"}}, r"/image/pullPolicy"),
    ("bad digest", {"image": {"digest": "latest"}}, r"/image/digest"),
    ("privileged port", {"server": {"port": 80}}, r"/server/port.*minimum"),
    ("service port too big", {"service": {"port": 70000}}, r"/service/port.*maximum"),
    ("bad log format", {"server": {"logFormat": "xml"}}, r"/server/logFormat"),
    ("host name instead of an address", {"server": {"host": "localhost"}}, r"/server/host"),
    ("zero workers", {"server": {"workers": 0}}, r"/server/workers.*minimum"),
    ("zero memory budget", {"server": {"maxBufferedBytes": 0}}, r"/server/maxBufferedBytes.*minimum"),
    ("memory budget as a quantity", {"server": {"maxBufferedBytes": "128Mi"}},
     r"/server/maxBufferedBytes.*want null or integer"),
    ("bad quantity", {"resources": {"limits": {"memory": "lots"}}}, r"/resources/limits/memory"),
    ("unknown resources key", {"resources": {"request": {}}}, r"/resources.*'request' not allowed"),
    ("bad PDB budget", {"podDisruptionBudget": {"maxUnavailable": "half"}}, r"/podDisruptionBudget/maxUnavailable"),
    ("label value not a string", {"commonLabels": {"team": 7}}, r"/commonLabels/team.*want string"),
    ("bad namespace name", {"networkPolicy": {"metacontrollerNamespace": "Meta_Controller"}},
     r"/networkPolicy/metacontrollerNamespace"),
    ("fullnameOverride too long", {"fullnameOverride": "x" * 64}, r"/fullnameOverride.*maxLength"),
    ("bad seccomp type", {"securityContext": {"seccompProfile": {"type": "Whatever"}}},
     r"/securityContext/seccompProfile/type"),
    ("bad spread policy", {"topologySpreadConstraints": [
        {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "Sometimes"}]},
     r"/topologySpreadConstraints/0/whenUnsatisfiable"),
    ("zero API budget", {"driver": {"kubeQps": 0}}, r"/driver/kubeQps"),
    ("API burst as a fraction", {"driver": {"kubeBurst": 2.5}}, r"/driver/kubeBurst"),
    ("zero event rate", {"driver": {"eventsQps": 0}}, r"/driver/eventsQps"),
    ("zero event burst", {"driver": {"eventsBurst": 0}}, r"/driver/eventsBurst.*minimum"),
    ("negative debounce", {"driver": {"reconcileDebounceMs": -1}}, r"/driver/reconcileDebounceMs.*minimum"),
    ("negative settle", {"driver": {"statusSettleMs": -1}}, r"/driver/statusSettleMs.*minimum"),
    ("no workers", {"driver": {"workers": 0}}, r"/driver/workers.*minimum"),
    ("too many workers", {"driver": {"workers": 65536}}, r"/driver/workers.*maximum"),
    ("debounce as a duration", {"driver": {"reconcileDebounceMs": "250ms"}},
     r"/driver/reconcileDebounceMs.*want null or integer"),
    ("bad scrape interval", {"metrics": {"serviceMonitor": {"enabled": True, "interval": "often"}}},
     r"/metrics/serviceMonitor/interval"),
    ("aggregated API switch as a string", {"driver": {"aggregatedApi": {"enabled": "true"}}},
     r"/driver/aggregatedApi/enabled.*want boolean"),
    ("aggregated API on a privileged port", aggregated_api(port=443), r"/driver/aggregatedApi/port.*minimum"),
    ("aggregated API service port too big", aggregated_api(servicePort=65536),
     r"/driver/aggregatedApi/servicePort.*maximum"),
    ("group priority zero", aggregated_api(groupPriorityMinimum=0), r"/driver/aggregatedApi/groupPriorityMinimum"),
    ("group priority over 20000", aggregated_api(groupPriorityMinimum=20001),
     r"/driver/aggregatedApi/groupPriorityMinimum.*maximum"),
    ("version priority over 1000", aggregated_api(versionPriority=1001),
     r"/driver/aggregatedApi/versionPriority.*maximum"),
    ("unknown aggregated API key", aggregated_api(caBundle="x"), r"/driver/aggregatedApi.*'caBundle' not allowed"),
    ("zero certificate validity", aggregated_api(certValidityDays=0), r"/driver/aggregatedApi/certValidityDays"),
    ("issuer without a name", aggregated_api(certManager={"enabled": True, "issuerRef": {"kind": "ClusterIssuer"}}),
     r"/driver/aggregatedApi/certManager/issuerRef"),
    ("unknown issuer key",
     aggregated_api(certManager={"enabled": True, "issuerRef": {"name": "x", "namespace": "y"}}),
     r"/driver/aggregatedApi/certManager/issuerRef.*'namespace' not allowed"),
    ("certificate duration in days", aggregated_api(certManager={"enabled": True, "duration": "90d"}),
     r"/driver/aggregatedApi/certManager/duration"),
]


@pytest.mark.parametrize("values, message", [(v, m) for _, v, m in MALFORMED], ids=[i for i, _, _ in MALFORMED])
def test_malformed_values_are_rejected(chart: helm_python.Chart, values: dict, message: str) -> None:
    with pytest.raises(helm_python.HelmValuesError) as caught:
        render(chart, values)
    assert re.search(message, str(caught.value)), str(caught.value)


def test_values_schema_is_strict(chart: helm_python.Chart) -> None:
    """Every object in values.schema.json closes its properties, except the
    ones that hold free-form Kubernetes types or user maps."""
    free_form = {
        "/global", "/podSecurityContext", "/securityContext", "/affinity", "/networkPolicy/metacontrollerPodSelector",
        "/tolerations/items", "/extraEnv/items", "/networkPolicy/metricsFrom/items", "/networkPolicy/apiFrom/items",
        "/topologySpreadConstraints/items/labelSelector", "/metrics/serviceMonitor/relabelings/items",
        "/metrics/serviceMonitor/metricRelabelings/items", "/tracing/egress/items",
    }
    schema = chart.schema
    loose = []

    def walk(node: dict, path: str) -> None:
        if "$ref" in node:
            node = schema["definitions"][node["$ref"].rsplit("/", 1)[1]]
        if node.get("type") == "object" and "additionalProperties" not in node and path not in free_form:
            loose.append(path)
        for key, child in node.get("properties", {}).items():
            walk(child, f"{path}/{key}")
        if isinstance(node.get("items"), dict):
            walk(node["items"], f"{path}/items")
        for key in ("oneOf", "anyOf"):
            for child in node.get(key, []):
                walk(child, path)

    walk(schema, "")
    assert loose == []


# --------------------------------------------------------------------------
# CRDs, samples, kube version


def test_chart_ships_every_crd_in_crds(chart: helm_python.Chart) -> None:
    files = crd_files()
    assert files, "crds/ is empty"
    assert sorted(Path(c["filename"]).name for c in chart.crds) == sorted(f.name for f in files)


@pytest.mark.parametrize("kube_version", KUBE_VERSIONS)
@pytest.mark.parametrize("path", crd_files() + conversion_files(), ids=lambda p: p.name)
def test_crds_validate_strictly(path: Path, kube_version: str) -> None:
    for crd in load_yaml_documents(path.read_text()):
        assert crd["kind"] == "CustomResourceDefinition"
        assert path.name == f"{crd['metadata']['name']}.yaml"
        assert validation_errors(crd, kube_version) == []
        assert len([v for v in crd["spec"]["versions"] if v.get("storage")]) == 1, path.name


def test_parent_crds_have_the_status_subresource() -> None:
    """Metacontroller refuses a parent whose CRD lacks the status subresource
    for the version it names (docs/metacontroller.md §2); the driver writes it too."""
    crds = {(crd["spec"]["group"], crd["spec"]["names"]["plural"]): crd for crd in crds_by_group_kind().values()}
    checked = 0
    for name, cc in controller_manifests().items():
        parent = cc["spec"]["parentResource"]
        group, _, version = parent["apiVersion"].rpartition("/")
        crd = crds.get((group, parent["resource"]))
        if crd is None:
            warnings.warn(f"no CRD for {name}'s parent {parent['resource']}.{group} in crds/ yet; not checked")
            continue
        [served] = [v for v in crd["spec"]["versions"] if v["name"] == version]
        assert served["served"] and "status" in served.get("subresources", {}), name
        checked += 1
    assert checked, "no parent CRD in crds/ at all"


SAMPLES = sorted((ROOT / "samples").glob("*.yaml"))


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_samples_match_our_crds(path: Path) -> None:
    sample = load_yaml_file(path)
    group, _, version = sample["apiVersion"].rpartition("/")
    crd = crds_by_group_kind().get((group, sample["kind"]))
    if crd is None:
        pytest.skip(f"{path.name}: no CRD for {sample['kind']}.{group} in crds/ yet; schema check skipped")
    assert version in [v["name"] for v in crd["spec"]["versions"] if v["served"]]
    assert schema_errors(custom_resource_schema(crd, version), sample) == []


def test_there_is_a_sample_for_every_controller() -> None:
    kinds = {(api_group(load_yaml_file(p)["apiVersion"]), load_yaml_file(p)["kind"]) for p in SAMPLES}
    for name, cc in controller_manifests().items():
        group = api_group(cc["spec"]["parentResource"]["apiVersion"])
        assert any(g == group for g, _ in kinds), f"no sample for {name}"


def test_samples_are_the_seed_manifests() -> None:
    samples = {load_yaml_file(p)["kind"]: load_yaml_file(p) for p in SAMPLES}
    assert samples["Hello"] == {"apiVersion": "fraim.co.jp/v1", "kind": "Hello",
                                "metadata": {"name": "hello"}, "spec": {"replicas": 2}}
    assert samples["Hikawa"] == {"apiVersion": "zundokokiyoshi.kaitoy.github.com/v1beta1", "kind": "Hikawa",
                                 "metadata": {"name": "hikawa-sample", "labels": {"controller-tools.k8s.io": "1.0"}},
                                 "spec": {"intervalMillis": 500}}
    assert samples["Foo"] == {"apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo",
                              "metadata": {"name": "example-foo"},
                              "spec": {"deploymentName": "example-foo", "replicas": 1}}


def test_crd_schema_check_is_not_vacuous() -> None:
    """The CRD-derived schema rejects what the API server would."""
    crds = crds_by_group_kind()
    hello = crds.get(("fraim.co.jp", "Hello"))
    if hello is None:
        pytest.skip("no Hello CRD in crds/")
    schema = custom_resource_schema(hello, "v1")
    good = {"apiVersion": "fraim.co.jp/v1", "kind": "Hello", "metadata": {"name": "hello"}, "spec": {"replicas": 2}}
    assert schema_errors(schema, good) == []
    for bad_spec in ({"replicas": 100}, {"replicas": -1}, {"replicas": "2"}, {}, {"replicas": 2, "replica": 2}):
        assert schema_errors(schema, {**good, "spec": bad_spec}), bad_spec
    assert schema_errors(schema, {**good, "apiVersion": "fraim.co.jp/v2"})


def test_kube_version_floor_matches_the_crds() -> None:
    """Chart.yaml's kubeVersion floor is the Kubernetes version the CRDs are
    generated for (k8s-openapi's v1_XX feature in Cargo.toml)."""
    cargo = (ROOT / "Cargo.toml").read_text()
    match = re.search(r'k8s-openapi\s*=\s*\{[^}]*features\s*=\s*\[[^\]]*"v1_(\d+)"', cargo)
    assert match, "no k8s-openapi v1_XX feature in Cargo.toml"
    assert kube_floor() == f"1.{match.group(1)}"
    assert chart_metadata()["kubeVersion"] == f">={kube_floor()}.0-0"
    assert KUBE_VERSIONS[0] == kube_floor()


def test_chart_metadata() -> None:
    meta = chart_metadata()
    assert meta["apiVersion"] == "v2" and meta["name"] == CHART_NAME and meta["type"] == "application"
    assert re.fullmatch(r"\d+\.\d+\.\d+", meta["version"])
    cargo_version = re.search(r'^\[package\][^\[]*?^version\s*=\s*"([^"]+)"', (ROOT / "Cargo.toml").read_text(),
                              re.MULTILINE | re.DOTALL)
    assert cargo_version and meta["appVersion"] == cargo_version.group(1), "appVersion should be the crate version"


# --------------------------------------------------------------------------
# Packaging


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return Path(helm_python.package(CHART, destination=tmp_path_factory.mktemp("package")))


def packaged_names(package: Path) -> list[str]:
    with tarfile.open(package) as archive:
        return [m.name.split("/", 1)[1] for m in archive.getmembers() if m.isfile()]


def test_packaged_chart_holds_the_chart_and_nothing_else(package: Path) -> None:
    names = packaged_names(package)
    # Everything the chart needs at install time...
    for needed in ("Chart.yaml", "values.yaml", "values.schema.json", "templates/NOTES.txt",
                   "templates/_helpers.tpl", ".helmignore"):
        assert needed in names, needed
    assert {f"metacontroller/{c}.yaml" for c in CONTROLLERS} <= set(names)
    assert {f"admission/{c}.yaml" for c in CONTROLLERS} <= set(names)
    assert {f"crds/{p.name}" for p in crd_files()} <= set(names)
    assert {f"conversion/{p.name}" for p in conversion_files()} <= set(names)
    assert {"monitoring/alerts.yaml", "monitoring/dashboard.json"} <= set(names)
    # ...and nothing else: the chart's own directories, its files, and
    # top-level documents (README.md, LICENSE, CHANGELOG.md...).
    chart_files = {"Chart.yaml", "values.yaml", "values.schema.json", ".helmignore"}
    unexpected = [
        n for n in names
        if not n.startswith(("templates/", "crds/", "conversion/", "metacontroller/", "admission/", "monitoring/"))
        and n not in chart_files
        and not re.fullmatch(r"[A-Z][A-Z_-]*(\.md|\.txt)?", n)
    ]
    assert unexpected == [], f"add these to chart/.helmignore or to the chart on purpose: {unexpected}"


def test_packaged_chart_leaves_out_what_an_editor_leaves_behind(tmp_path: Path) -> None:
    """chart/.helmignore is meaningful: a copy of chart/ with an editor's
    backup and swap files and a .DS_Store packages without them."""
    copy_dir = tmp_path / "chart"
    shutil.copytree(CHART, copy_dir)
    strays = ["values.yaml~", ".DS_Store", "crds/.helloes.fraim.co.jp.yaml.swp", "monitoring/alerts.yaml.orig"]
    for stray in strays:
        (copy_dir / stray).write_text("stray\n")
    names = packaged_names(Path(helm_python.package(copy_dir, destination=tmp_path / "package")))
    assert "Chart.yaml" in names
    assert [s for s in strays if s in names] == []


def test_packaged_chart_renders_like_the_directory(package: Path, chart: helm_python.Chart) -> None:
    assert package.name == f"{CHART_NAME}-{chart_metadata()['version']}.tgz"
    with helm_python.Chart.load(package) as packaged:
        for values in ({}, {"mode": "driver"}):
            assert packaged.render(values, name="r", namespace="n") == chart.render(values, name="r", namespace="n")


# --------------------------------------------------------------------------
# Dockerfile (cannot be built here: no Docker engine)


def test_dockerfile_is_multi_stage_release_and_non_root() -> None:
    """Three stages: the release build, `prebuilt` (FROM scratch, the root
    filesystem scripts/image.sh lays out: the image the cluster tests run)
    and the default one from distroless. Both runtime stages run the same
    way: user 65532, the same allocator setting, the same entrypoint."""
    text = (ROOT / "Dockerfile").read_text()
    stages = re.findall(r"^FROM\s+(\S+)(?:\s+AS\s+(\S+))?", text, re.MULTILINE | re.IGNORECASE)
    assert [name for _, name in stages] == ["build", "prebuilt", ""], stages
    assert stages[1][0] == "scratch"
    assert stages[2][0] == "gcr.io/distroless/cc-debian12:nonroot"
    assert re.search(r"cargo build --release --locked --bin metahook", text)
    bodies = re.split(r"^FROM\s.*$", text, flags=re.MULTILINE)[2:]
    assert len(bodies) == 2
    for body in bodies:
        assert re.search(r"^USER 65532:65532$", body, re.MULTILINE), body
        assert re.search(r'^ENTRYPOINT \["/usr/local/bin/metahook"\]$', body, re.MULTILINE), body
        # Freed request bodies go back to the kernel (bench/memory.sh measures
        # with the same setting).
        assert re.search(r"^ENV MALLOC_MMAP_THRESHOLD_=131072$", body, re.MULTILINE), body
    assert "MALLOC_MMAP_THRESHOLD_=131072" in (ROOT / "bench" / "memory.sh").read_text()
    # The chart runs the image's user; keep them in step.
    values = load_yaml_file(CHART / "values.yaml")
    assert values["securityContext"]["runAsUser"] == 65532 == values["podSecurityContext"]["runAsUser"]
