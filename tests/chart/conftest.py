"""Shared machinery for the chart tests: render with real Helm (helm-python-sdk),
parse strictly, and validate against Kubernetes and custom-resource schemas.

Nothing here needs a cluster: Helm renders offline, kubernetes-validate ships
the Kubernetes OpenAPI schemas, and the custom resources are checked against
the CRDs in chart/crds/ and the small schemas in tests/chart/schemas/. Only the
tests marked `cluster` (test_install.py) install the chart into the control
plane of tests/cluster/; tests/chart/run.sh leaves them out unless asked.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import helm_python
import jsonschema
import kubernetes_validate
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "chart"
SCHEMAS = Path(__file__).resolve().parent / "schemas"

CHART_NAME = "metahook"
DEFAULT_RELEASE = "metahook"
DEFAULT_NAMESPACE = "metahook"


# --------------------------------------------------------------------------
# YAML: strict loading (duplicate keys are template bugs, not last-one-wins)


class _StrictLoader(yaml.SafeLoader):
    pass


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    mapping: dict = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in mapping:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        mapping[key] = loader.construct_object(value_node, deep=deep)
    return mapping


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def load_yaml_documents(text: str) -> list[dict]:
    return [doc for doc in yaml.load_all(text, Loader=_StrictLoader) if doc is not None]


def load_yaml_file(path: Path) -> dict:
    docs = load_yaml_documents(path.read_text())
    assert len(docs) == 1, f"{path} should hold exactly one document, has {len(docs)}"
    return docs[0]


# --------------------------------------------------------------------------
# The project's files


def controller_manifests() -> dict[str, dict]:
    """chart/metacontroller/<name>.yaml by controller name, as checked in."""
    manifests = {}
    for path in sorted((CHART / "metacontroller").glob("*.yaml")):
        cc = load_yaml_file(path)
        manifests[cc["metadata"]["name"]] = cc
    return manifests


CONTROLLERS = sorted(controller_manifests())


def crd_files() -> list[Path]:
    return sorted((CHART / "crds").glob("*.yaml"))


def conversion_files() -> list[Path]:
    """The CRDs of more than one version, which the chart templates
    (chart/templates/crds-with-conversion.yaml)."""
    return sorted((CHART / "conversion").glob("*.yaml"))


def crds_by_group_kind() -> dict[tuple[str, str], dict]:
    crds = {}
    for path in crd_files() + conversion_files():
        for crd in load_yaml_documents(path.read_text()):
            crds[(crd["spec"]["group"], crd["spec"]["names"]["kind"])] = crd
    return crds


def chart_metadata() -> dict:
    return load_yaml_file(CHART / "Chart.yaml")


def kube_floor() -> str:
    """major.minor of Chart.yaml's kubeVersion floor (">=1.33.0-0" -> "1.33")."""
    match = re.fullmatch(r">=\s*(\d+)\.(\d+)\.\d+(-0)?", chart_metadata()["kubeVersion"])
    assert match, f"unexpected kubeVersion {chart_metadata()['kubeVersion']!r}"
    return f"{match.group(1)}.{match.group(2)}"


# Validate against the oldest Kubernetes the chart supports and the newest one
# kubernetes-validate knows.
KUBE_VERSIONS = sorted(
    {kube_floor(), ".".join(kubernetes_validate.latest_version().split(".")[:2])},
    key=lambda v: tuple(int(part) for part in v.split(".")),
)


def expected_labels(release: str = DEFAULT_RELEASE, name: str = CHART_NAME) -> dict[str, str]:
    meta = chart_metadata()
    return {
        "app.kubernetes.io/name": name,
        "app.kubernetes.io/instance": release,
        "app.kubernetes.io/managed-by": "Helm",
        "app.kubernetes.io/part-of": "metahook",
        "app.kubernetes.io/version": str(meta["appVersion"]),
        "helm.sh/chart": f"{meta['name']}-{meta['version']}",
    }


# --------------------------------------------------------------------------
# Rendering


@dataclass
class Rendered:
    """One `helm template`: the objects (each tagged with its template) and NOTES."""

    release: str
    namespace: str
    objects: list[dict] = field(default_factory=list)
    notes: str = ""

    def kinds(self) -> list[str]:
        return sorted(obj["kind"] for obj in self.objects)

    def all(self, kind: str) -> list[dict]:
        return [obj for obj in self.objects if obj["kind"] == kind]

    def one(self, kind: str, name: str | None = None) -> dict:
        found = [o for o in self.all(kind) if name is None or o["metadata"]["name"] == name]
        assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}: {self.kinds()}"
        return found[0]

    def maybe(self, kind: str) -> dict | None:
        found = self.all(kind)
        assert len(found) <= 1, f"expected at most one {kind}, found {len(found)}"
        return found[0] if found else None

    @property
    def deployment(self) -> dict:
        return self.one("Deployment")

    @property
    def pod_spec(self) -> dict:
        return self.deployment["spec"]["template"]["spec"]

    @property
    def container(self) -> dict:
        containers = self.pod_spec["containers"]
        assert len(containers) == 1
        return containers[0]

    def env(self) -> dict[str, Any]:
        """The container's env as name -> value (or valueFrom)."""
        return {e["name"]: e.get("value", e.get("valueFrom")) for e in self.container.get("env", [])}


def render(
    chart: helm_python.Chart,
    values: dict | None = None,
    *,
    release: str = DEFAULT_RELEASE,
    namespace: str = DEFAULT_NAMESPACE,
) -> Rendered:
    manifests = chart.render(values or {}, name=release, namespace=namespace)
    out = Rendered(release=release, namespace=namespace)
    for template, text in sorted(manifests.items()):
        if template.endswith("NOTES.txt"):
            out.notes = text
            continue
        assert template.endswith(".yaml") or template.endswith(".tpl"), template
        for obj in load_yaml_documents(text):
            assert isinstance(obj, dict), f"{template} renders a non-object: {obj!r}"
            obj.setdefault("metadata", {})
            out.objects.append(obj)
    return out


# --------------------------------------------------------------------------
# Schemas for what kubernetes-validate does not know


def _json_schema(name: str) -> dict:
    return json.loads((SCHEMAS / name).read_text())


CUSTOM_SCHEMAS = {
    ("metacontroller.k8s.io/v1alpha1", "CompositeController"): _json_schema("compositecontroller.schema.json"),
    ("monitoring.coreos.com/v1", "ServiceMonitor"): _json_schema("servicemonitor.schema.json"),
    ("monitoring.coreos.com/v1", "PrometheusRule"): _json_schema("prometheusrule.schema.json"),
    ("cert-manager.io/v1", "Certificate"): _json_schema("certificate.schema.json"),
    ("cert-manager.io/v1", "Issuer"): _json_schema("issuer.schema.json"),
}

_NUMERIC_KEYWORDS = ("minimum", "maximum", "multipleOf")
_PLAIN_KEYWORDS = (
    "enum", "minLength", "maxLength", "pattern", "minItems", "maxItems", "uniqueItems",
    "minProperties", "maxProperties", "required", "format", "description", "title",
)


def structural_to_json_schema(schema: dict) -> dict:
    """A CRD's structural OpenAPI v3 schema as a strict JSON Schema.

    Strict like `kubectl apply` with server-side field validation: fields the
    schema does not declare are errors (unless x-kubernetes-preserve-unknown-
    fields says otherwise). nullable, int-or-string and OpenAPI 3.0's boolean
    exclusiveMinimum/Maximum are translated; CEL rules
    (x-kubernetes-validations) are not evaluated.
    """
    out: dict[str, Any] = {}
    types: list[str] = []
    if schema.get("x-kubernetes-int-or-string"):
        types = ["integer", "string"]
    elif "type" in schema:
        types = [schema["type"]]
    if types and schema.get("nullable"):
        types.append("null")
    if types:
        out["type"] = types if len(types) > 1 else types[0]
    for key in _PLAIN_KEYWORDS:
        if key in schema:
            out[key] = schema[key]
    if "enum" in out and schema.get("nullable"):
        out["enum"] = [*out["enum"], None]
    for key in _NUMERIC_KEYWORDS:
        if key in schema:
            out[key] = schema[key]
    for bound, flag in (("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum")):
        if schema.get(flag) is True:
            out[flag] = out.pop(bound)
    for key in ("allOf", "anyOf", "oneOf"):
        if key in schema:
            out[key] = [structural_to_json_schema(s) for s in schema[key]]
    if "not" in schema:
        out["not"] = structural_to_json_schema(schema["not"])
    if "items" in schema:
        out["items"] = structural_to_json_schema(schema["items"])
    if "properties" in schema:
        out["properties"] = {k: structural_to_json_schema(v) for k, v in schema["properties"].items()}
    if schema.get("x-kubernetes-embedded-resource"):
        out.setdefault("properties", {}).update(
            {"apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"}}
        )
    additional = schema.get("additionalProperties")
    if isinstance(additional, dict):
        out["additionalProperties"] = structural_to_json_schema(additional)
    elif isinstance(additional, bool):
        out["additionalProperties"] = additional
    elif schema.get("type") == "object" and not schema.get("x-kubernetes-preserve-unknown-fields"):
        out["additionalProperties"] = False
    return out


def custom_resource_schema(crd: dict, version: str) -> dict:
    """JSON Schema for a whole custom resource of `crd` at `version`."""
    [served] = [v for v in crd["spec"]["versions"] if v["name"] == version]
    body = structural_to_json_schema(served["schema"]["openAPIV3Schema"])
    body.setdefault("properties", {})
    body["properties"].update(
        {
            "apiVersion": {"const": f"{crd['spec']['group']}/{version}"},
            "kind": {"const": crd["spec"]["names"]["kind"]},
            "metadata": {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": {
                        "type": "string",
                        "maxLength": 253,
                        "pattern": r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
                    },
                    "namespace": {"type": "string"},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
                },
            },
        }
    )
    body["required"] = sorted({*body.get("required", []), "apiVersion", "kind", "metadata"})
    body["additionalProperties"] = False
    return body


def schema_errors(schema: dict, instance: Any) -> list[str]:
    validator = jsonschema.Draft202012Validator(schema)
    return [
        f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}"
        for e in sorted(validator.iter_errors(instance), key=lambda e: list(map(str, e.absolute_path)))
    ]


def validation_errors(obj: dict, kube_version: str) -> list[str]:
    """Every problem with one rendered object, against the schema that owns it.

    Built-in kinds: kubernetes-validate's strict schemas (unknown fields are
    errors). Custom resources: the CRDs in chart/crds/ and chart/conversion/, or tests/chart/schemas/.
    An object with no schema at all is itself an error.
    """
    api_version, kind = obj.get("apiVersion", ""), obj.get("kind", "")
    custom = CUSTOM_SCHEMAS.get((api_version, kind))
    if custom is not None:
        return schema_errors(custom, obj)
    group, _, version = api_version.rpartition("/")
    crd = crds_by_group_kind().get((group, kind))
    if crd is not None:
        return schema_errors(custom_resource_schema(crd, version), obj)
    try:
        validated = kubernetes_validate.validate(obj, kube_version, strict=True)
        assert validated == kube_version, f"validated against {validated}, not {kube_version}"
    except kubernetes_validate.ValidationError as e:
        path = "/".join(map(str, e.path)) or "<root>"
        return [f"{path}: {e.message}"]
    except kubernetes_validate.SchemaNotFoundError as e:
        return [e.message]
    return []


# --------------------------------------------------------------------------
# Pod Security Standards, "restricted" profile (the checks that apply here)

_RESTRICTED_VOLUMES = {
    "configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
    "persistentVolumeClaim", "projected", "secret",
}


def restricted_violations(pod_spec: dict) -> list[str]:
    problems = []
    pod_ctx = pod_spec.get("securityContext", {})
    for flag in ("hostNetwork", "hostPID", "hostIPC"):
        if pod_spec.get(flag):
            problems.append(f"{flag} is set")
    for volume in pod_spec.get("volumes", []):
        kinds = set(volume) - {"name"}
        if not kinds <= _RESTRICTED_VOLUMES:
            problems.append(f"volume {volume['name']} uses {sorted(kinds - _RESTRICTED_VOLUMES)}")
    containers = pod_spec.get("initContainers", []) + pod_spec.get("containers", [])
    for c in containers:
        ctx = c.get("securityContext", {})
        name = c["name"]
        if ctx.get("privileged"):
            problems.append(f"{name}: privileged")
        if ctx.get("allowPrivilegeEscalation") is not False:
            problems.append(f"{name}: allowPrivilegeEscalation is not false")
        caps = ctx.get("capabilities", {})
        if "ALL" not in caps.get("drop", []):
            problems.append(f"{name}: capabilities do not drop ALL")
        if set(caps.get("add", [])) - {"NET_BIND_SERVICE"}:
            problems.append(f"{name}: adds capabilities {caps['add']}")
        if not ctx.get("runAsNonRoot", pod_ctx.get("runAsNonRoot")):
            problems.append(f"{name}: runAsNonRoot is not true")
        if ctx.get("runAsUser", pod_ctx.get("runAsUser")) == 0:
            problems.append(f"{name}: runs as uid 0")
        seccomp = ctx.get("seccompProfile", pod_ctx.get("seccompProfile", {}))
        if seccomp.get("type") not in ("RuntimeDefault", "Localhost"):
            problems.append(f"{name}: seccompProfile is {seccomp.get('type')!r}")
        for port in c.get("ports", []):
            if port.get("hostPort"):
                problems.append(f"{name}: hostPort {port['hostPort']}")
    return problems


# --------------------------------------------------------------------------
# Fixtures


def pytest_configure(config: Any) -> None:
    config.addinivalue_line(
        "markers",
        "cluster: installs the chart into the control plane of tests/cluster/ "
        "(tests/e2e/run.sh runs them; tests/chart/run.sh deselects them unless given -m)",
    )


@pytest.fixture(scope="session")
def chart() -> Iterator[helm_python.Chart]:
    with helm_python.Chart.load(CHART) as loaded:
        yield loaded


@pytest.fixture(scope="session")
def default(chart: helm_python.Chart) -> Rendered:
    return render(chart)


@pytest.fixture(scope="session")
def driver(chart: helm_python.Chart) -> Rendered:
    return render(chart, {"mode": "driver"})


def only(controller: str, **extra: Any) -> dict:
    """Values enabling just one controller."""
    values = {"controllers": {name: {"enabled": name == controller} for name in CONTROLLERS}}
    values.update(extra)
    return values


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: Any, call: Any) -> Any:
    """Each phase's report on the test item (item.rep_call...), so that a
    cluster test's fixtures can print what the cluster saw when it failed."""
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report


# --------------------------------------------------------------------------
# Pass/fail counts at the end of the run


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: Any) -> None:
    stats = terminalreporter.stats
    counts = {key: len(stats.get(key, [])) for key in ("passed", "failed", "error", "skipped")}
    terminalreporter.write_sep("=", "chart checks")
    terminalreporter.write_line(
        f"chart checks: {counts['passed']} passed, {counts['failed']} failed, "
        f"{counts['error']} errors, {counts['skipped']} skipped"
    )
