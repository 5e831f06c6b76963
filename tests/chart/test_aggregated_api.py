"""The aggregated API (driver.metahook.dev/v1alpha1 reconciles), installed by
the chart (mode=driver, driver.aggregatedApi.enabled) onto the real node of
tests/cluster/ and reached through kube-apiserver's aggregation layer, with
kubectl. Marked `cluster` (run by tests/e2e/run.sh).

Nothing runs outside the cluster: the chart's pod (metahook's image, started
by the kubelet) serves the API over HTTPS with the certificate the chart
generated and mounted from its Secret; kube-apiserver reaches it through
the APIService and the chart's Service (the aggregator routes to the
Service's endpoint, the pod's address, and verifies the certificate for
`<service>.<namespace>.svc` against the APIService's caBundle).
"""

from __future__ import annotations

import base64
import json
import re
import ssl
import tempfile
import time
import tomllib
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Callable, Iterator

import helm_python
import pytest
import yaml

from chartcluster import (Cluster, Installed, api_path, audit_records, check_security_context,  # noqa: F401
                          check_started_by_the_kubelet, cluster, create_hello, delete_work_namespace, describe,
                          installed, kubectl, lease_holder, pod_log, rbac_refusal, refusals, report,
                          report_if_failed, service_account_name, unique, wait_ready_pods, waiter)
from kube import Kube, wait_for

pytestmark = pytest.mark.cluster

GROUP_VERSION = "driver.metahook.dev/v1alpha1"
# What the seeds name as their hooks' revision (`.revision(env!("CARGO_PKG_VERSION"))`).
SEEDS_MANIFEST = Path(__file__).resolve().parents[2] / "seeds/Cargo.toml"
SEEDS_VERSION = tomllib.loads(SEEDS_MANIFEST.read_text())["package"]["version"]
API_SERVICE = "/apis/apiregistration.k8s.io/v1/apiservices/v1alpha1.driver.metahook.dev"
HELLO_CRD = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/helloes.fraim.co.jp"


def available(admin: Kube) -> str | None:
    """The APIService's Available condition: "True", "False" or None."""
    return availability(admin).get("status")


def availability(admin: Kube) -> dict:
    service = admin.get(API_SERVICE)
    for condition in (service or {}).get("status", {}).get("conditions", []):
        if condition["type"] == "Available":
            return condition
    return {}


def wait_available(admin: Kube, want: str, wait: Callable[..., Any]) -> None:
    """`wait` (a chartcluster.waiter: its failure shows the pods) for the
    APIService's Available condition; the condition in the message."""
    try:
        wait(f"the APIService to be Available={want}", lambda: available(admin) == want)
    except AssertionError as e:
        raise AssertionError(f"APIService Available: {availability(admin)}\n{e}") from None


def rows(cluster: Cluster, *args: str) -> list[dict[str, str]]:
    """`kubectl get reconciles ARGS` as one dict per row, keyed by header."""
    out = kubectl(cluster, "get", "reconciles", *args).stdout
    lines = [line for line in out.splitlines() if line.strip()]
    if not lines:
        return []
    # Columns start where their header does (kubectl pads with spaces).
    headers = list(re.finditer(r"\S+", lines[0]))
    names = [h.group() for h in headers]
    starts = [h.start() for h in headers]
    result = []
    for line in lines[1:]:
        cells = [line[s:e].strip() for s, e in zip(starts, starts[1:] + [len(line)])]
        result.append(dict(zip(names, cells)))
    return result


@pytest.fixture(scope="module")
def api_release(cluster: Cluster, chart: helm_python.Chart) -> Iterator[Installed]:
    values = {"mode": "driver", "driver": {"aggregatedApi": {"enabled": True}}}
    with installed(cluster, chart, values, "api") as release:
        yield release


@pytest.fixture(autouse=True)
def report_failures(request: pytest.FixtureRequest, cluster: Cluster, api_release: Installed) -> Iterator[None]:
    yield
    report_if_failed(request, cluster, (api_release.namespace, api_release.selector))


def test_the_aggregated_api_serves_reconciles_through_kubectl(cluster: Cluster, api_release: Installed) -> None:
    admin = cluster.admin
    ns = api_release.namespace
    account = service_account_name(api_release)
    [api_service] = api_release.all("APIService")
    service_name = api_service["spec"]["service"]["name"]
    assert api_service["spec"]["service"]["port"] == 443 and api_service["spec"].get("caBundle"), api_service
    audit_offset = cluster.audit_log.stat().st_size
    work = unique("api-work")
    admin.create("/api/v1/namespaces", {"metadata": {"name": work}})
    wait = waiter(cluster, ns, api_release.selector, also=lambda: report(cluster, work))
    figures: list[tuple[str, float]] = []
    pods: list[dict] = []
    try:
        [pod] = wait_ready_pods(cluster, api_release, 1)
        pods.append(pod)
        check_started_by_the_kubelet(cluster, pod)
        assert [p["containerPort"] for p in pod["spec"]["containers"][0]["ports"]] == [8080, 8443]
        check_security_context(cluster, pod)
        wait("the pod to hold the Lease", lambda: lease_holder(admin, api_release) == pod["metadata"]["name"])
        wait_available(admin, "True", wait)
        listed = kubectl(cluster, "api-resources", "--api-group=driver.metahook.dev", "-o", "wide").stdout
        assert "reconciles" in listed and "Reconcile" in listed and "get,list" in listed.replace(" ", ""), listed

        drive_three(admin, work, wait)
        check_rows(cluster, work)
        check_yaml_and_selectors(cluster, work)
        check_invalid_hello(cluster, admin, work, wait)
        secret = admin.ok("GET", f"/api/v1/namespaces/{ns}/secrets/{service_name}-api-tls")
        check_access(cluster, admin, work, pod["status"]["podIP"], base64.b64decode(secret["data"]["ca.crt"]))
        explained = kubectl(cluster, "explain", "reconcile.status").stdout
        for field in ("controller", "outcome", "plan", "parent", "lastRun", "children", "error"):
            assert f"  {field}\t" in explained, f"status.{field} is not explained:\n{explained}"
        assert "Every operation the reconcile executed" in explained, explained

        # A deleted parent's record goes with it.
        admin.delete(api_path("fraim.co.jp/v1", "helloes", work, "hello"))
        wait("the deleted Hello's reconcile to disappear",
             lambda: "NotFound" in kubectl(cluster, "get", "reconcile", "hello.hello", "-n", work,
                                           check=False).stderr)

        # Unavailable while no pod serves, back when one does.
        old_log = pod_log(cluster, ns, pod["metadata"]["name"])
        assert refusals(old_log) == [], "the API server refused the pod:\n" + "\n".join(refusals(old_log)[:20])
        scale = f"deployment/{api_release.deployment}"
        stopped = time.monotonic()
        kubectl(cluster, "scale", "-n", ns, scale, "--replicas=0")
        wait_ready_pods(cluster, api_release, 0)
        wait_available(admin, "False", wait)
        figures.append(("no pod → Available=False", time.monotonic() - stopped))
        restarted = time.monotonic()
        kubectl(cluster, "scale", "-n", ns, scale, "--replicas=1")
        [pod] = wait_ready_pods(cluster, api_release, 1, not_named={pod["metadata"]["name"]})
        pods.append(pod)
        wait_available(admin, "True", wait)
        figures.append(("a new pod → Available=True", time.monotonic() - restarted))

        def back() -> list[dict[str, str]] | None:
            found = rows(cluster, "-n", work)
            return found if {r["NAME"] for r in found} >= {"hikawa.hikawa-sample", "foo.example-foo"} else None

        wait("the new pod's reconciles to be listed", back)
    finally:
        for p in pods:
            print(f"--- log of {p['metadata']['name']}\n{pod_log(cluster, ns, p['metadata']['name'])[-5000:]}")
        delete_work_namespace(admin, work)
        print("\n*** the APIService across its pod's replacement (seconds):")
        for what, seconds in figures:
            print(f"    {what:<40} {seconds:6.1f}")
    refused = refusals(pod_log(cluster, ns, pods[-1]["metadata"]["name"]))
    assert refused == [], "the API server refused the new pod:\n" + "\n".join(refused[:20])
    # The reviews and the ConfigMap watch are within the chart's RBAC.
    records = audit_records(cluster.audit_log, audit_offset, account)
    denied = [describe(r) for r in records if rbac_refusal(r)]
    assert denied == [], "requests of the chart's ServiceAccount refused:\n" + "\n".join(denied)
    made = {(r["verb"], r.get("objectRef", {}).get("resource")) for r in records}
    for expected in [("create", "subjectaccessreviews"), ("watch", "configmaps")]:
        assert expected in made, f"no {expected} by {account}: {sorted(made, key=str)}"


def drive_three(admin: Kube, ns: str, wait: Callable[..., Any]) -> None:
    """A Hello, a Hikawa and a Foo, each driven until its status says so."""
    create_hello(admin, ns, "hello", 2, labels={"team": "web"})
    admin.create(api_path("zundokokiyoshi.kaitoy.github.com/v1beta1", "hikawas", ns),
                 {"apiVersion": "zundokokiyoshi.kaitoy.github.com/v1beta1", "kind": "Hikawa",
                  "metadata": {"name": "hikawa-sample"}, "spec": {"intervalMillis": 500}})
    admin.create(api_path("samplecontroller.k8s.io/v1alpha1", "foos", ns),
                 {"apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo",
                  "metadata": {"name": "example-foo"}, "spec": {"deploymentName": "example-foo", "replicas": 1}})
    for path in (api_path("fraim.co.jp/v1", "helloes", ns, "hello"),
                 api_path("samplecontroller.k8s.io/v1alpha1", "foos", ns, "example-foo")):
        wait(f"{path} to have a status", lambda: (admin.get(path) or {}).get("status"))


def check_rows(cluster: Cluster, ns: str) -> None:
    def three() -> list[dict[str, str]] | None:
        # Each parent's row, once its last reconcile succeeded (one may
        # have failed first: see chartcluster.STALE_MAPPING).
        found = [r for r in rows(cluster, "-A") if r.get("NAMESPACE") == ns]
        done = len(found) == 3 and all(r["OUTCOME"] in ("Succeeded", "Unchanged", "StaleCache") for r in found)
        return found if done else None

    try:
        found = wait_for("a row per parent in kubectl get reconciles -A", three)
    except AssertionError as e:
        raise AssertionError(f"{e}:\n{kubectl(cluster, 'get', 'reconciles', '-A').stdout}") from None
    header = ["NAMESPACE", "NAME", "CONTROLLER", "PARENT", "OUTCOME", "REVISION", "AGE", "DURATION", "MESSAGE"]
    assert list(found[0].keys()) == header, found
    by_name = {r["NAME"]: r for r in found}
    assert set(by_name) == {"foo.example-foo", "hello.hello", "hikawa.hikawa-sample"}, found
    assert by_name["hello.hello"]["CONTROLLER"] == "hello"
    assert by_name["hello.hello"]["PARENT"] == "Hello/hello"
    assert by_name["foo.example-foo"]["PARENT"] == "Foo/example-foo"
    assert by_name["hikawa.hikawa-sample"]["PARENT"] == "Hikawa/hikawa-sample"
    for row in found:
        assert row["OUTCOME"] in ("Succeeded", "Unchanged", "StaleCache"), row
        # The seeds declare their crate's version as their hooks' revision.
        assert row["REVISION"] == SEEDS_VERSION, row
        assert re.fullmatch(r"\d+(µs|ms)|\d+\.\ds", row["DURATION"]), row
        assert re.fullmatch(r"\d+(s|m\d*s?|h\d*m?|d\d*h?)", row["AGE"]), row


def check_yaml_and_selectors(cluster: Cluster, ns: str) -> None:
    record = yaml.safe_load(kubectl(cluster, "get", "reconcile", "hello.hello", "-n", ns, "-o", "yaml").stdout)
    assert record["apiVersion"] == GROUP_VERSION and record["kind"] == "Reconcile", record
    assert record["metadata"]["labels"] == {"team": "web", "driver.metahook.dev/controller": "hello"}, record
    status = record["status"]
    assert status["parent"]["kind"] == "Hello" and status["parent"]["name"] == "hello", status
    assert isinstance(status["plan"], list) and all("op" in step for step in status["plan"]), status
    assert status["children"]["observed"] >= 0 and "lastRun" in status, status
    # The whole list, as JSON: a ReconcileList.
    listed = json.loads(kubectl(cluster, "get", "reconciles", "-n", ns, "-o", "json").stdout)
    assert listed["kind"] == "List" or listed["kind"] == "ReconcileList", listed["kind"]
    assert len(listed["items"]) == 3
    # -l and --field-selector as kubectl users expect.
    assert [r["NAME"] for r in rows(cluster, "-n", ns, "-l", "driver.metahook.dev/controller=foo")] == ["foo.example-foo"]
    assert [r["NAME"] for r in rows(cluster, "-n", ns, "-l", "team=web")] == ["hello.hello"]
    assert [r["NAME"] for r in rows(cluster, "-n", ns, "--field-selector", "metadata.name=hikawa.hikawa-sample")] \
        == ["hikawa.hikawa-sample"]
    refused = kubectl(cluster, "get", "reconciles", "-n", ns, "--field-selector", "spec.replicas=2", check=False)
    assert refused.returncode != 0 and "field label not supported" in refused.stderr, refused.stderr
    missing = kubectl(cluster, "get", "reconcile", "hello.nothing", "-n", ns, check=False)
    assert missing.returncode != 0 and "NotFound" in missing.stderr, missing.stderr


def check_invalid_hello(cluster: Cluster, admin: Kube, ns: str, wait: Callable[..., Any]) -> None:
    """A Hello whose spec got in before the schema forbade it: its row says
    why, with the hook's condition."""
    pointer = "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/replicas/maximum"
    patch = "application/json-patch+json"
    admin.ok("PATCH", HELLO_CRD, [{"op": "remove", "path": pointer}], content_type=patch)
    try:
        body = {"apiVersion": "fraim.co.jp/v1", "kind": "Hello", "metadata": {"name": "invalid"},
                "spec": {"replicas": 21}}
        wait_for("the loosened schema to take 21 replicas",
                 lambda: admin.call("POST", api_path("fraim.co.jp/v1", "helloes", ns), body).ok)
    finally:
        admin.ok("PATCH", HELLO_CRD, [{"op": "add", "path": pointer, "value": 20}], content_type=patch)

    def invalid_row() -> dict[str, str] | None:
        found = [r for r in rows(cluster, "-n", ns) if r["NAME"] == "hello.invalid"]
        return found[0] if found and "InvalidSpec" in found[0]["MESSAGE"] else None

    row = wait("the invalid Hello's row to say why", invalid_row)
    assert "replicas" in row["MESSAGE"] or "spec is invalid" in row["MESSAGE"], row
    status = json.loads(kubectl(cluster, "get", "reconcile", "hello.invalid", "-n", ns, "-o", "json").stdout)["status"]
    assert any(c["reason"] == "InvalidSpec" for c in status["conditions"]), status


def check_access(cluster: Cluster, admin: Kube, ns: str, pod_ip: str, ca_pem: bytes) -> None:
    # RBAC decides, through a SubjectAccessReview.
    nobody = kubectl(cluster, "get", "reconciles", "-A", "--as=nobody", check=False)
    assert nobody.returncode != 0, nobody.stdout
    assert "Forbidden" in nobody.stderr and 'cannot list resource "reconciles"' in nobody.stderr, nobody.stderr
    # The role aggregated to view: a user bound to view in a namespace may list there.
    admin.create(f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings", {
        "metadata": {"name": "viewer"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "viewer"}]})

    def viewer_lists() -> list[dict[str, str]] | None:
        done = kubectl(cluster, "get", "reconciles", "-n", ns, "--as=viewer", check=False)
        return rows(cluster, "-n", ns, "--as=viewer") if done.returncode == 0 else None

    assert len(wait_for("a view-bound user to list reconciles", viewer_lists)) >= 3
    assert kubectl(cluster, "get", "reconciles", "-A", "--as=viewer", check=False).returncode != 0, \
        "view in one namespace is not view everywhere"

    # Straight to the pod's HTTPS port (routed from this machine, as for the
    # aggregator) without the front proxy's certificate: 401, whatever
    # identity the headers claim. The pod serves the chart's certificate.
    with tempfile.NamedTemporaryFile() as ca:
        ca.write(ca_pem)
        ca.flush()
        context = ssl.create_default_context(cafile=ca.name)
    context.check_hostname = False
    request = urllib.request.Request(f"https://{pod_ip}:8443/apis/{GROUP_VERSION}/reconciles",
                                     headers={"X-Remote-User": "system:admin", "X-Remote-Group": "system:masters"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, context=context, timeout=10)
    assert refused.value.code == 401
    body = json.loads(refused.value.read())
    assert body["kind"] == "Status" and body["reason"] == "Unauthorized", body
