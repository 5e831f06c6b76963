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

import copy
import re
from typing import Iterator

import helm_python
import pytest

from chartcluster import (Cluster, Installed, api_path, check_security_context,  # noqa: F401
                          check_started_by_the_kubelet, cluster, create_hello, delete_work_namespace, drive_foo,
                          drive_hikawa, hello_converged, installed, pod_log, container_pid,
                          report, report_if_failed, unique, upgrade, wait_ready_pods, waiter)
from conftest import CONTROLLERS, ROOT, load_yaml_documents

pytestmark = pytest.mark.cluster

METACONTROLLER_SRC = ROOT / "target" / "metacontroller" / "src" / "manifests" / "production"
METACONTROLLER_IMAGE = "localhost/metahook-test/metacontroller:v4.17.2"
METACONTROLLER_NS = "metacontroller"
COMPOSITECONTROLLERS = "/apis/metacontroller.k8s.io/v1alpha1/compositecontrollers"

RESOURCES = {
    "Namespace": ("v1", "namespaces", False), "ServiceAccount": ("v1", "serviceaccounts", True),
    "ClusterRole": ("rbac.authorization.k8s.io/v1", "clusterroles", False),
    "ClusterRoleBinding": ("rbac.authorization.k8s.io/v1", "clusterrolebindings", False),
    "CustomResourceDefinition": ("apiextensions.k8s.io/v1", "customresourcedefinitions", False),
    "Deployment": ("apps/v1", "deployments", True),
}


def metacontroller_objects() -> list[dict]:
    """Metacontroller's production manifests, as its kustomization lists
    them, with its StatefulSet as a Deployment of the same pod."""
    if not METACONTROLLER_SRC.is_dir():
        pytest.fail(f"no {METACONTROLLER_SRC}: tests/metacontroller/build.sh extracts Metacontroller's source",
                    pytrace=False)
    objects = []
    for name in ["metacontroller-namespace.yaml", "metacontroller-rbac.yaml", "metacontroller-crds-v1.yaml",
                 "metacontroller.yaml"]:
        objects += load_yaml_documents((METACONTROLLER_SRC / name).read_text())
    out = []
    for obj in objects:
        if obj["kind"] == "StatefulSet":
            spec = obj["spec"]
            template = copy.deepcopy(spec["template"])
            [container] = template["spec"]["containers"]
            assert container["image"].startswith("ghcr.io/metacontroller/metacontroller:v4.17.2"), container
            container["image"] = METACONTROLLER_IMAGE
            container["imagePullPolicy"] = "Never"
            obj = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": obj["metadata"],
                   "spec": {"replicas": spec["replicas"], "selector": spec["selector"], "template": template}}
        assert obj["kind"] in RESOURCES, obj["kind"]
        out.append(obj)
    return out


def object_path(obj: dict) -> str:
    api_version, resource, namespaced = RESOURCES[obj["kind"]]
    ns = obj["metadata"].get("namespace") if namespaced else None
    return api_path(api_version, resource, ns, obj["metadata"]["name"])


@pytest.fixture(scope="module")
def metacontroller(cluster: Cluster) -> Iterator[dict]:
    """Metacontroller running, Ready (its /readyz), as a pod the kubelet runs."""
    admin = cluster.admin
    objects = metacontroller_objects()
    ns_path = api_path("v1", "namespaces", None, METACONTROLLER_NS)
    # An earlier run's namespace may still be terminating.
    waiter(cluster, METACONTROLLER_NS)(
        f"namespace {METACONTROLLER_NS} to be gone or active",
        lambda: (admin.get(ns_path) or {}).get("status", {}).get("phase") != "Terminating")
    try:
        for obj in objects:
            admin.ok("PATCH", object_path(obj), obj, query={"fieldManager": "metahook-chart-test", "force": "true"},
                     content_type="application/apply-patch+yaml")
        wait = waiter(cluster, METACONTROLLER_NS)
        for crd in (o for o in objects if o["kind"] == "CustomResourceDefinition"):
            wait(f"the CRD {crd['metadata']['name']} established", lambda: any(
                c["type"] == "Established" and c["status"] == "True"
                for c in (admin.get(object_path(crd)) or {}).get("status", {}).get("conditions", [])))

        def ready() -> dict | None:
            pods = admin.items(api_path("v1", "pods", METACONTROLLER_NS),
                               labelSelector="app.kubernetes.io/name=metacontroller")
            ok = [p for p in pods if any(c["type"] == "Ready" and c["status"] == "True"
                                         for c in p.get("status", {}).get("conditions", []))]
            return ok[0] if ok else None

        pod = wait("Metacontroller's pod Ready", ready)
        [status] = pod["status"]["containerStatuses"]
        assert status["containerID"].startswith("containerd://"), status
        yield pod
    finally:
        for obj in reversed(objects):
            if obj["kind"] != "Namespace":
                admin.delete(object_path(obj))
        admin.delete(ns_path)
        waiter(cluster, METACONTROLLER_NS)(f"namespace {METACONTROLLER_NS} to be deleted",
                                           lambda: admin.get(ns_path) is None)


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

