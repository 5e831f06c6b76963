"""The aggregated API (driver.metahook.dev/v1alpha1 reconciles), installed by
the chart (driver.aggregatedApi.enabled) into the real control plane of
tests/cluster/ and reached through kube-apiserver's aggregation layer, with
kubectl. Marked `cluster` (run by tests/e2e/run.sh).

The chart's pod runs no container here (the kubelet stand-in starts none), so
`metahook serve --drive` runs outside the cluster as in test_install.py: as
the chart's ServiceAccount, with the pod's settings and the certificate the
chart generated (its Secret). kube-apiserver reaches it on loopback: the
chart's Service is replaced by one of type ExternalName with the same name,
pointing at `localhost` (the aggregator resolves an ExternalName Service to
that host and the APIService's port, and verifies the serving certificate
for `<service>.<namespace>.svc`, the name the chart's certificate carries).
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Iterator

import helm_python
import pytest
import yaml

from kube import Kube, wait_for
# `cluster` is the session fixture of test_install.py, shared.
from test_install import (Cluster, Driver, Installed, ServiceAccount, api_path, audit_records,  # noqa: F401
                          cluster, delete_work_namespace, describe, free_port, installed, pod_command,
                          rbac_refusal, service_account, unique)

pytestmark = pytest.mark.cluster

GROUP_VERSION = "driver.metahook.dev/v1alpha1"
API_SERVICE = "/apis/apiregistration.k8s.io/v1/apiservices/v1alpha1.driver.metahook.dev"
HELLO_CRD = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/helloes.fraim.co.jp"


def kubectl(cluster: Cluster, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    binary = os.environ.get("METAHOOK_E2E_KUBECTL") or shutil.which("kubectl")
    assert binary, "kubectl: set METAHOOK_E2E_KUBECTL (tests/e2e/run.sh does)"
    done = subprocess.run([binary, "--kubeconfig", str(cluster.kubeconfig), *args], capture_output=True,
                          text=True, timeout=60)
    if check and done.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} exited {done.returncode}:\n{done.stderr}")
    return done


def available(admin: Kube) -> str | None:
    """The APIService's Available condition: "True", "False" or None."""
    return availability(admin).get("status")


def availability(admin: Kube) -> dict:
    service = admin.get(API_SERVICE)
    for condition in (service or {}).get("status", {}).get("conditions", []):
        if condition["type"] == "Available":
            return condition
    return {}


def wait_available(admin: Kube, want: str) -> None:
    try:
        wait_for(f"the APIService to be Available={want}", lambda: available(admin) == want)
    except AssertionError as e:
        raise AssertionError(f"{e}: {availability(admin)}") from None


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
    port = free_port()
    values = {"mode": "driver", "driver": {"aggregatedApi": {"enabled": True, "servicePort": port}}}
    with installed(cluster, chart, values, "api") as release:
        yield release


def test_the_aggregated_api_serves_reconciles_through_kubectl(cluster: Cluster, api_release: Installed,
                                                              tmp_path: Path) -> None:
    admin = cluster.admin
    ns = api_release.namespace
    account: ServiceAccount = service_account(cluster, api_release)
    [api_service] = api_release.all("APIService")
    port = api_service["spec"]["service"]["port"]
    service_name = api_service["spec"]["service"]["name"]

    # The chart's certificate, as the pod would mount it.
    secret = admin.ok("GET", f"/api/v1/namespaces/{ns}/secrets/{service_name}-api-tls")
    tls = tmp_path / "api-tls"
    tls.mkdir()
    for key in ("tls.crt", "tls.key", "ca.crt"):
        (tls / key).write_bytes(base64.b64decode(secret["data"][key]))

    # The Service, on loopback.
    admin.delete(f"/api/v1/namespaces/{ns}/services/{service_name}")
    wait_for("the chart's Service to go", lambda: admin.get(f"/api/v1/namespaces/{ns}/services/{service_name}") is None)
    admin.create(f"/api/v1/namespaces/{ns}/services", {
        "metadata": {"name": service_name},
        "spec": {"type": "ExternalName", "externalName": "localhost",
                 "ports": [{"name": "api", "port": port, "protocol": "TCP"}]}})

    pod_name = unique("outside")
    args, env, hook_port = pod_command(cluster, api_release, account, pod_name, tmp_path)
    assert env["METAHOOK_API_TLS_DIR"] and env["METAHOOK_API_LISTEN"].endswith(":8443"), env
    env["METAHOOK_API_LISTEN"] = f"127.0.0.1:{port}"
    env["METAHOOK_API_TLS_DIR"] = str(tls)
    audit_offset = cluster.audit_log.stat().st_size
    work = unique("api-work")
    admin.create("/api/v1/namespaces", {"metadata": {"name": work}})
    driver = Driver(args, env, tmp_path / "metahook.log", hook_port)
    figures: list[tuple[str, float]] = []
    try:
        started = time.monotonic()
        driver.wait_for("the driver to be ready", driver.ready)
        wait_available(admin, "True")
        figures.append(("start → APIService Available=True", time.monotonic() - started))
        listed = kubectl(cluster, "api-resources", "--api-group=driver.metahook.dev", "-o", "wide").stdout
        assert "reconciles" in listed and "Reconcile" in listed and "get,list" in listed.replace(" ", ""), listed

        drive_three(admin, work, driver)
        check_rows(cluster, work)
        check_yaml_and_selectors(cluster, work)
        check_invalid_hello(cluster, admin, work, driver)
        check_access(cluster, admin, work, port, tls)
        explained = kubectl(cluster, "explain", "reconcile.status").stdout
        for field in ("controller", "outcome", "plan", "parent", "lastRun", "children", "error"):
            assert f"  {field}\t" in explained, f"status.{field} is not explained:\n{explained}"
        assert "Every operation the reconcile executed" in explained, explained

        # A deleted parent's record goes with it.
        admin.delete(api_path("fraim.co.jp/v1", "helloes", work, "hello"))
        wait_for("the deleted Hello's reconcile to disappear",
                 lambda: "NotFound" in kubectl(cluster, "get", "reconcile", "hello.hello", "-n", work,
                                               check=False).stderr)

        # Unavailable while the process is down, back when it is up.
        stopped = time.monotonic()
        assert driver.stop() == 0
        wait_available(admin, "False")
        figures.append(("stop → Available=False", time.monotonic() - stopped))
        restarted = time.monotonic()
        driver = Driver(args, env, tmp_path / "metahook-2.log", hook_port)
        driver.wait_for("the restarted driver to be ready", driver.ready)
        wait_available(admin, "True")
        figures.append(("restart → Available=True", time.monotonic() - restarted))
        back = rows(cluster, "-n", work)
        assert {r["NAME"] for r in back} >= {"hikawa.hikawa-sample", "foo.example-foo"}, back
    finally:
        status = driver.stop()
        print(f"--- driver log ({driver.log})\n{driver.text()[-5000:]}")
        delete_work_namespace(admin, work)
        print("\n*** the APIService across a restart of the process (seconds):")
        for what, seconds in figures:
            print(f"    {what:<40} {seconds:6.1f}")
    assert status == 0, f"metahook exited with {status} after SIGTERM"
    # The reviews and the ConfigMap watch are within the chart's RBAC.
    records = audit_records(cluster.audit_log, audit_offset, account.username)
    denied = [describe(r) for r in records if rbac_refusal(r)]
    assert denied == [], "requests of the chart's ServiceAccount refused:\n" + "\n".join(denied)
    made = {(r["verb"], r.get("objectRef", {}).get("resource")) for r in records}
    for expected in [("create", "subjectaccessreviews"), ("watch", "configmaps")]:
        assert expected in made, f"no {expected} by {account.username}: {sorted(made, key=str)}"


def drive_three(admin: Kube, ns: str, driver: Driver) -> None:
    """A Hello, a Hikawa and a Foo, each driven until its status says so."""
    admin.create(api_path("fraim.co.jp/v1", "helloes", ns),
                 {"apiVersion": "fraim.co.jp/v1", "kind": "Hello", "metadata": {"name": "hello", "labels": {"team": "web"}},
                  "spec": {"replicas": 2}})
    admin.create(api_path("zundokokiyoshi.kaitoy.github.com/v1beta1", "hikawas", ns),
                 {"apiVersion": "zundokokiyoshi.kaitoy.github.com/v1beta1", "kind": "Hikawa",
                  "metadata": {"name": "hikawa-sample"}, "spec": {"intervalMillis": 500}})
    admin.create(api_path("samplecontroller.k8s.io/v1alpha1", "foos", ns),
                 {"apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo",
                  "metadata": {"name": "example-foo"}, "spec": {"deploymentName": "example-foo", "replicas": 1}})
    for path in (api_path("fraim.co.jp/v1", "helloes", ns, "hello"),
                 api_path("samplecontroller.k8s.io/v1alpha1", "foos", ns, "example-foo")):
        driver.wait_for(f"{path} to have a status", lambda: (admin.get(path) or {}).get("status"))


def check_rows(cluster: Cluster, ns: str) -> None:
    def three() -> list[dict[str, str]] | None:
        found = [r for r in rows(cluster, "-A") if r.get("NAMESPACE") == ns]
        return found if len(found) == 3 else None

    try:
        found = wait_for("a row per parent in kubectl get reconciles -A", three)
    except AssertionError as e:
        raise AssertionError(f"{e}:\n{kubectl(cluster, 'get', 'reconciles', '-A').stdout}") from None
    header = ["NAMESPACE", "NAME", "CONTROLLER", "PARENT", "OUTCOME", "AGE", "DURATION", "MESSAGE"]
    assert list(found[0].keys()) == header, found
    by_name = {r["NAME"]: r for r in found}
    assert set(by_name) == {"foo.example-foo", "hello.hello", "hikawa.hikawa-sample"}, found
    assert by_name["hello.hello"]["CONTROLLER"] == "hello"
    assert by_name["hello.hello"]["PARENT"] == "Hello/hello"
    assert by_name["foo.example-foo"]["PARENT"] == "Foo/example-foo"
    assert by_name["hikawa.hikawa-sample"]["PARENT"] == "Hikawa/hikawa-sample"
    for row in found:
        assert row["OUTCOME"] in ("Succeeded", "Unchanged", "StaleCache"), row
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


def check_invalid_hello(cluster: Cluster, admin: Kube, ns: str, driver: Driver) -> None:
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

    row = driver.wait_for("the invalid Hello's row to say why", invalid_row)
    assert "replicas" in row["MESSAGE"] or "spec is invalid" in row["MESSAGE"], row
    status = json.loads(kubectl(cluster, "get", "reconcile", "hello.invalid", "-n", ns, "-o", "json").stdout)["status"]
    assert any(c["reason"] == "InvalidSpec" for c in status["conditions"]), status


def check_access(cluster: Cluster, admin: Kube, ns: str, port: int, tls: Path) -> None:
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

    # Straight to the HTTPS port without the front proxy's certificate: 401.
    context = ssl.create_default_context(cafile=str(tls / "ca.crt"))
    context.check_hostname = False
    request = urllib.request.Request(f"https://127.0.0.1:{port}/apis/{GROUP_VERSION}/reconciles",
                                     headers={"X-Remote-User": "system:admin", "X-Remote-Group": "system:masters"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, context=context, timeout=10)
    assert refused.value.code == 401
    body = json.loads(refused.value.read())
    assert body["kind"] == "Status" and body["reason"] == "Unauthorized", body
