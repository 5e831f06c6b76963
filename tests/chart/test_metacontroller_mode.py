"""Metacontroller mode, as users run it: the real Metacontroller (v4.17.2,
the image tests/cluster preloads as localhost/metahook-test/metacontroller:
v4.17.2, built from its unmodified source by tests/metacontroller/build.sh)
runs as a pod in namespace `metacontroller`, installed from its own
manifests (manifests/production/ of the source that script extracts to
target/metacontroller/src, read here at test time): its CRDs, its
ServiceAccount and RBAC as they are, and its pod as its StatefulSet
describes it (image swapped for the preloaded one, pullPolicy Never) but
run by a Deployment: this cluster's controller-manager runs no StatefulSet
controller. Then `helm install` of metahook in its default mode, onto the
real node (tests/cluster), with metahook's image (METAHOOK_E2E_IMAGE).

Metacontroller calls the hooks through the CompositeControllers the chart
rendered: http://<release>.<namespace>:80/<controller>/<hook>, the chart's
Service, resolved by CoreDNS and routed by kube-proxy to the pods the
kubelet runs. Hello, Hikawa and Foo converge; the pods count the hook
calls they answered; deleting the pods brings new ones up, and a Hello
created after converges through them.

The chart's NetworkPolicy is rendered and in the cluster, admitting hook
calls only from namespace `metacontroller`. No enforcing network plugin runs
here (the CNI bridge plugin does not enforce NetworkPolicy), so these tests
do NOT prove that anything else is blocked: only that the policy's shape is
what the API server accepts and that Metacontroller's own calls get through
a cluster where the policy exists.
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
import tempfile
from pathlib import Path
from typing import Iterator

import helm_python
import pytest

from chartcluster import (Cluster, Installed, api_path, check_security_context,  # noqa: F401
                          check_started_by_the_kubelet, cluster, create_hello, delete_work_namespace, drive_foo,
                          drive_hikawa, hello_converged, https_in_node, installed, pod_log, container_pid,
                          report, report_if_failed, unique, upgrade, wait_ready_pods, waiter)
from conftest import CONTROLLERS, ROOT
from metacontroller_pod import COMPOSITECONTROLLERS, METACONTROLLER_NS, metacontroller  # noqa: F401

pytestmark = pytest.mark.cluster

@pytest.fixture(scope="module")
def mc_release(cluster: Cluster, chart: helm_python.Chart, metacontroller: dict) -> Iterator[Installed]:
    with installed(cluster, chart, {}, "mc") as release:
        yield release


@pytest.fixture(autouse=True)
def report_failures(request: pytest.FixtureRequest, cluster: Cluster, mc_release: Installed) -> Iterator[None]:
    yield
    report_if_failed(request, cluster, (mc_release.namespace, mc_release.selector), (METACONTROLLER_NS, None))


def hook_calls(cluster: Cluster, release: Installed, pod: dict, controller: str, hook: str) -> int:
    """metahook_hook_requests_total{controller, hook, code="200"} of one pod,
    read through the API server's proxy to the pod."""
    name = pod["metadata"]["name"]
    text = cluster.admin.call("GET", f"/api/v1/namespaces/{release.namespace}/pods/{name}:8080/proxy/metrics").body
    # (A pod no call reached has no metahook_hook_requests_total series yet.)
    assert isinstance(text, str) and "metahook_hook_requests_in_flight" in text, f"{name}'s /metrics: {text!r:.300}"
    total = 0
    for line in text.splitlines():
        if line.startswith("metahook_hook_requests_total{"):
            labels = dict(re.findall(r'(\w+)="([^"]*)"', line))
            if labels.get("controller") == controller and labels.get("hook") == hook and labels.get("code") == "200":
                total += int(float(line.rsplit(" ", 1)[1]))
    return total


def test_the_chart_installs_next_to_metacontroller(cluster: Cluster, mc_release: Installed) -> None:
    """The hook service's pods run (kubelet, containerd), with the chart's
    security context and no ServiceAccount token; the CompositeControllers
    point at the release's Service; the NetworkPolicy is there (not
    enforced here: see the module docstring)."""
    admin, ns, release = cluster.admin, mc_release.namespace, mc_release.release
    service = mc_release.one("Service")
    fullname, port = service["metadata"]["name"], service["spec"]["ports"][0]["port"]
    pods = wait_ready_pods(cluster, mc_release, 2)
    for pod in pods:
        check_started_by_the_kubelet(cluster, pod)
        seen = check_security_context(cluster, pod)
        assert b"--drive" not in seen["cmdline"], seen["cmdline"]
        mounts = open(f"/proc/{container_pid(cluster, pod['status']['containerStatuses'][0]['containerID'])}"
                      "/mountinfo").read()
        assert "kubernetes.io/serviceaccount" not in mounts, "the hook service got an API token mounted"

    stored = {cc["metadata"]["name"]: cc for cc in admin.items(
        COMPOSITECONTROLLERS, labelSelector=f"app.kubernetes.io/instance={release}")}
    assert sorted(stored) == CONTROLLERS
    rendered = {cc["metadata"]["name"]: cc for cc in mc_release.all("CompositeController")}
    for name, cc in stored.items():
        # Metacontroller's own CRD kept every field the chart rendered.
        assert cc["spec"] == rendered[name]["spec"], name
        for hook, spec in cc["spec"]["hooks"].items():
            assert spec["webhook"]["service"] == {"name": fullname, "namespace": ns, "port": port}, (name, hook)
            assert spec["webhook"]["path"] == f"/{name}/{hook}"

    policy = admin.ok("GET", api_path("networking.k8s.io/v1", "networkpolicies", ns,
                                      mc_release.one("NetworkPolicy")["metadata"]["name"]))
    peers = [peer for rule in policy["spec"]["ingress"] for peer in rule.get("from", [])]
    assert {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": METACONTROLLER_NS}}} in peers, policy
    # Egress in policyTypes with no egress rule (the server drops the empty
    # list): every connection out denied, were it enforced.
    assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"] and not policy["spec"].get("egress"), policy


def test_metacontroller_drives_hello_hikawa_and_foo_through_the_service(cluster: Cluster, mc_release: Installed,
                                                                        metacontroller: dict) -> None:
    admin = cluster.admin
    work = unique("mc-work")
    admin.create("/api/v1/namespaces", {"metadata": {"name": work}})
    wait = waiter(cluster, work, also=lambda: report(cluster, mc_release.namespace, mc_release.selector)
                  + "\n" + report(cluster, METACONTROLLER_NS))
    try:
        pods = wait_ready_pods(cluster, mc_release, 2)
        create_hello(admin, work, "hello", 2)
        hello_converged(admin, work, "hello", 2, wait)
        drive_hikawa(admin, work, wait)
        drive_foo(admin, work, wait)
        # The hook service answered those calls: its pods counted them.
        for controller, hook in [("hello", "sync"), ("hikawa", "sync"), ("foo", "customize"), ("foo", "sync")]:
            calls = sum(hook_calls(cluster, mc_release, pod, controller, hook) for pod in pods)
            assert calls > 0, f"no {controller}/{hook} call answered 200 by {[p['metadata']['name'] for p in pods]}"
        # Finalize through the hooks too.
        admin.delete(api_path("fraim.co.jp/v1", "helloes", work, "hello"))
        wait("the Hello finalized and gone",
             lambda: admin.get(api_path("fraim.co.jp/v1", "helloes", work, "hello")) is None
             and admin.get(api_path("apps/v1", "deployments", work, "hello")) is None)

        # Kill the hook service's pods: new ones come up, and a Hello created
        # after converges through them.
        old = {p["metadata"]["name"] for p in pods}
        for name in old:
            admin.delete(api_path("v1", "pods", mc_release.namespace, name))
        new = wait_ready_pods(cluster, mc_release, 2, not_named=old)
        for pod in new:
            check_started_by_the_kubelet(cluster, pod)
        create_hello(admin, work, "after-restart", 1)
        hello_converged(admin, work, "after-restart", 1, wait)
        assert sum(hook_calls(cluster, mc_release, pod, "hello", "sync") for pod in new) > 0
        for pod in new:
            log = pod_log(cluster, mc_release.namespace, pod["metadata"]["name"])
            assert "panicked" not in log.lower(), log[-3000:]
    finally:
        delete_work_namespace(admin, work)


def test_helm_upgrade_rolls_the_hook_service_while_it_keeps_answering(cluster: Cluster, chart: helm_python.Chart,
                                                                      mc_release: Installed) -> None:
    """A changed value rolls the pods (RollingUpdate, maxUnavailable 0,
    maxSurge 1, under the chart's hard spread across nodes: on this one node
    the surge pod must still be schedulable); two new pods, Ready, and a
    Hello created after converges through them."""
    admin = cluster.admin
    before = {p["metadata"]["name"] for p in wait_ready_pods(cluster, mc_release, 2)}
    upgraded = upgrade(cluster, chart, mc_release, {"server": {"logFormat": "text"}})
    after = wait_ready_pods(cluster, upgraded, 2, not_named=before)
    for pod in after:
        env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
        assert env["METAHOOK_LOG_FORMAT"] == "text", env
        check_started_by_the_kubelet(cluster, pod)
    work = unique("mc-upgraded")
    admin.create("/api/v1/namespaces", {"metadata": {"name": work}})
    wait = waiter(cluster, work, also=lambda: report(cluster, mc_release.namespace, mc_release.selector)
                  + "\n" + report(cluster, METACONTROLLER_NS))
    try:
        create_hello(admin, work, "after-upgrade", 1)
        hello_converged(admin, work, "after-upgrade", 1, wait)
        assert sum(hook_calls(cluster, upgraded, pod, "hello", "sync") for pod in after) > 0
    finally:
        delete_work_namespace(admin, work)



def secret_text(cluster: Cluster, namespace: str, name: str, key: str) -> str:
    secret = cluster.admin.ok("GET", api_path("v1", "secrets", namespace, name))
    return base64.b64decode(secret["data"][key]).decode()


def another_ca_client() -> tuple[str, str, str]:
    """A CA the chart never saw, and a client certificate it signed: (CA PEM,
    certificate PEM, key PEM)."""
    with tempfile.TemporaryDirectory() as tmp:
        def openssl(*args: str) -> None:
            subprocess.run(["openssl", *args], cwd=tmp, check=True, capture_output=True)
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=not-the-chart's",
                "-keyout", "ca.key", "-out", "ca.crt")
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=stranger", "-keyout", "client.key",
                "-out", "client.csr")
        openssl("x509", "-req", "-in", "client.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                "-days", "1", "-out", "client.crt")
        return tuple((Path(tmp) / f).read_text() for f in ("ca.crt", "client.crt", "client.key"))  # type: ignore[return-value]


def test_metacontroller_calls_the_hooks_over_mutual_tls_as_the_chart_configures(
        cluster: Cluster, chart: helm_python.Chart, mc_release: Installed, metacontroller: dict) -> None:
    """hooks.tls with clientAuth: the pods serve HTTPS with the chart's
    certificate (the kubelet's HTTPS probes make them Ready), ask callers
    for a client certificate the chart's CA signed, and Metacontroller,
    configured by the CompositeControllers' caBundle and clientTLS, drives a
    Hello through them. From inside the node: no client certificate gets
    401 on a hook and 200 on /metrics; another CA's certificate is refused
    in the handshake; the chart's client certificate gets the hook's answer.
    Then one CompositeController given another CA's bundle: Metacontroller
    refuses the hook's certificate, says so in an Event, writes no child."""
    admin = cluster.admin
    before = {p["metadata"]["name"] for p in wait_ready_pods(cluster, mc_release, 2)}
    tls = upgrade(cluster, chart, mc_release, {"hooks": {"tls": {"enabled": True, "clientAuth": True}}})
    pods = wait_ready_pods(cluster, tls, 2, not_named=before)
    ns, fullname = tls.namespace, tls.one("Service")["metadata"]["name"]
    for pod in pods:
        probe = pod["spec"]["containers"][0]["readinessProbe"]["httpGet"]
        assert probe["scheme"] == "HTTPS", probe
    ca = secret_text(cluster, ns, f"{fullname}-hooks-tls", "ca.crt")
    client = (secret_text(cluster, ns, f"{fullname}-hooks-client-tls", "tls.crt"),
              secret_text(cluster, ns, f"{fullname}-hooks-client-tls", "tls.key"))
    for cc in admin.items(COMPOSITECONTROLLERS, labelSelector=f"app.kubernetes.io/instance={tls.release}"):
        for hook, spec in cc["spec"]["hooks"].items():
            webhook = spec["webhook"]
            assert webhook["service"]["protocol"] == "https", (cc["metadata"]["name"], hook, webhook)
            assert webhook["caBundle"]["inline"].strip() == ca.strip(), (cc["metadata"]["name"], hook)
            assert webhook["clientTLS"]["secretRef"] == {"name": f"{fullname}-hooks-client-tls", "namespace": ns}

    # From inside the node, to one pod, verified under the Service's name.
    url = f"https://{pods[0]['status']['podIP']}:{pods[0]['spec']['containers'][0]['ports'][0]['containerPort']}"
    server_name = f"{fullname}.{ns}"
    request = (ROOT / "fixtures" / "hello" / "new.json").read_bytes()
    status, text = https_in_node(f"{url}/hello/sync", server_name, ca, request)
    assert status == 401, (status, text[:300])
    stranger_ca, *stranger = another_ca_client()
    status, text = https_in_node(f"{url}/hello/sync", server_name, ca, request, client=tuple(stranger))  # type: ignore[arg-type]
    assert status == 0, f"another CA's client certificate was let through: {status} {text[:300]}"
    status, text = https_in_node(f"{url}/hello/sync", server_name, ca, request, client=client)
    assert status == 200 and "children" in json.loads(text), (status, text[:300])
    status, text = https_in_node(f"{url}/metrics", server_name, ca)
    assert status == 200 and "metahook_hook_requests_in_flight" in text, (status, text[:300])

    work = unique("mc-tls")
    admin.create("/api/v1/namespaces", {"metadata": {"name": work}})
    wait = waiter(cluster, work, also=lambda: report(cluster, ns, tls.selector) + "\n" + report(cluster, METACONTROLLER_NS))
    try:
        create_hello(admin, work, "over-mtls", 2)
        hello_converged(admin, work, "over-mtls", 2, wait)

        # Metacontroller told to trust another CA for Hello's hooks.
        cc_path = f"{COMPOSITECONTROLLERS}/hello"
        cc = admin.ok("GET", cc_path)
        hooks = {name: {"webhook": {**spec["webhook"], "caBundle": {"inline": stranger_ca}}}
                 for name, spec in cc["spec"]["hooks"].items()}
        admin.ok("PATCH", cc_path, {"spec": {"hooks": hooks}}, content_type="application/merge-patch+json")
        hellos = api_path("fraim.co.jp/v1", "helloes", work)
        create_hello(admin, work, "unverified", 1)

        def refused() -> str | None:
            events = admin.items(api_path("v1", "events", work), fieldSelector="involvedObject.name=unverified")
            return next((e["message"] for e in events if e.get("type") == "Warning"
                         and "certificate signed by unknown authority" in e.get("message", "")), None)

        message = wait("Metacontroller's Warning that the hook's certificate is not trusted", refused)
        print(f"Metacontroller's event: {message}")
        assert admin.get(api_path("apps/v1", "deployments", work, "unverified")) is None, "a child without a verified hook"
        status_of = (admin.get(f"{hellos}/unverified") or {}).get("status")
        assert not status_of, f"a status without a verified hook: {status_of}"
        # Its finalize hook cannot be called either: the finalizer goes by hand.
        admin.delete(f"{hellos}/unverified")
        reply = admin.call("PATCH", f"{hellos}/unverified", {"metadata": {"finalizers": None}},
                           content_type="application/merge-patch+json")
        assert reply.ok or reply.status == 404, reply
    finally:
        delete_work_namespace(admin, work)

