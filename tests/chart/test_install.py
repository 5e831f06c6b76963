"""Driver mode, installed exactly as users install it: `helm install` of the
chart (real Helm, helm-python-sdk) with mode=driver onto the real single
node of tests/cluster/ (kubelet, containerd with runc, CNI bridge,
kube-proxy, CoreDNS), running metahook's image built from this repository
(METAHOOK_E2E_IMAGE, loaded into the node's containerd by scripts/image.sh
DIR; pullPolicy Never, as no registry is reachable). Marked `cluster`:
tests/chart/run.sh leaves them out unless asked (`-m cluster`);
tests/e2e/run.sh asks, with the node up.

The tests run in order on one release (module fixture) and one work
namespace: the pod is scheduled and started by the kubelet, its probes
pass, it takes the Lease; the running process has the chart's security
context; a Hello (whose pods really run), a Hikawa and a Foo converge
through it with no request refused (the pod's log, the audit log); the
ServiceAccount is refused Secrets; `helm upgrade` with a changed value rolls
the pod and leaves what converged alone; a deleted pod is replaced and the
new one leads; `helm uninstall` leaves nothing of ours behind (the CRDs of
crds/ excepted, as Helm never deletes them).
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Iterator

import helm_python
import pytest

from chartcluster import (Cluster, Installed, api_path, audit_records, check_security_context,  # noqa: F401
                          check_started_by_the_kubelet, cluster, create_hello, delete_work_namespace, describe,
                          drive_foo, drive_hello, drive_hikawa, hello_converged, HIKAWA_GROUP, FOO_GROUP, install,
                          lease_holder, object_path, pod_log, rbac_refusal, refusals, report, report_if_failed,
                          service_account_name, uninstall, unique, upgrade, wait_ready_pods, waiter, work_then_release)
from conftest import conversion_files, crd_files, load_yaml_documents
from kube import Kube, wait_for

pytestmark = pytest.mark.cluster


class Driver:
    """The release under test, its pod of the moment and the work namespace."""

    def __init__(self, cluster: Cluster, installed: Installed, work: str, audit_offset: int) -> None:
        self.cluster = cluster
        self.installed = installed
        self.work = work
        # From before the install: the pod's watches start before it is ready.
        self.audit_offset = audit_offset
        self.uninstalled = False

    @property
    def admin(self) -> Kube:
        return self.cluster.admin

    def wait(self, what, check, deadline=None):
        """A wait whose failure shows the release's pods (describe, logs)
        and the work namespace's pods and events."""
        return waiter(self.cluster, self.installed.namespace, self.installed.selector,
                      also=lambda: report(self.cluster, self.work))(what, check, deadline)

    def the_pod(self, not_named: set[str] = frozenset()) -> dict:
        """The one pod, Ready (so leading: only the Lease holder is ready)."""
        [pod] = wait_ready_pods(self.cluster, self.installed, 1, not_named=not_named)
        return pod

    def leading(self, pod: dict) -> str:
        name = pod["metadata"]["name"]
        return self.wait(f"the Lease to be held by the pod {name}",
                         lambda: lease_holder(self.admin, self.installed) == name and name)

    def no_refusal_in_log(self, pod: dict) -> None:
        name = pod["metadata"]["name"]
        refused = refusals(pod_log(self.cluster, self.installed.namespace, name))
        assert refused == [], f"the API server refused the pod {name} something:\n" + "\n".join(refused[:20])


@pytest.fixture(scope="module")
def driver(cluster: Cluster, chart: helm_python.Chart) -> Iterator[Driver]:
    release, namespace = unique("driver"), unique("chart-driver")
    with work_then_release(cluster, release, namespace) as work:
        offset = cluster.audit_log.stat().st_size
        yield Driver(cluster, install(cluster, chart, {"mode": "driver"}, release, namespace), work, offset)


@pytest.fixture(autouse=True)
def report_failures(request: pytest.FixtureRequest, driver: Driver) -> Iterator[None]:
    yield
    report_if_failed(request, driver.cluster, (driver.installed.namespace, driver.installed.selector),
                     (driver.work, None))


def test_the_pod_is_started_by_the_kubelet_its_probes_pass_and_it_leads(driver: Driver) -> None:
    admin, installed = driver.admin, driver.installed
    kinds = sorted(o["kind"] for o in installed.objects)
    assert kinds == sorted(["ClusterRole", "ClusterRoleBinding", "ConfigMap", "Deployment", "Lease",
                            "NetworkPolicy", "Role", "RoleBinding", "Service", "ServiceAccount"]
                           + ["CustomResourceDefinition"] * len(conversion_files()))
    for obj in installed.objects:
        assert admin.get(object_path(obj, installed.namespace)) is not None, f"{obj['kind']} is not in the cluster"
    pod = driver.the_pod()
    name = pod["metadata"]["name"]
    status = check_started_by_the_kubelet(driver.cluster, pod)
    container = pod["spec"]["containers"][0]
    assert container["image"] == driver.cluster.image and container["imagePullPolicy"] == "Never", container
    # Ready means /readyz answered the kubelet's probe: caches synced and the Lease held.
    assert driver.leading(pod) == name
    # The liveness probe (every 10 s, 3 failures to restart) keeps passing:
    # still Ready and never restarted once the container has run past three
    # of its periods.
    probe = container["livenessProbe"]
    window = probe["periodSeconds"] * probe["failureThreshold"] + probe["timeoutSeconds"]
    started_at = datetime.fromisoformat(status["state"]["running"]["startedAt"].replace("Z", "+00:00")).timestamp()
    time.sleep(max(0.0, started_at + window + 2 - time.time()))
    pod = admin.ok("GET", api_path("v1", "pods", installed.namespace, name))
    [status] = pod["status"]["containerStatuses"]
    assert status["restartCount"] == 0 and status["ready"], (
        f"{name} restarted or is not ready {window} s after it started:\n"
        f"{report(driver.cluster, installed.namespace, installed.selector)}")
    driver.no_refusal_in_log(pod)


def test_the_running_container_has_the_chart_security_context(driver: Driver) -> None:
    seen = check_security_context(driver.cluster, driver.the_pod())
    assert b"--drive" in seen["cmdline"], seen["cmdline"]


def test_a_hello_a_hikawa_and_a_foo_converge_through_the_pod(driver: Driver) -> None:
    """Through the pod only (no other driver runs): the Hello's pods really
    run and its status counts them Ready; Hikawa sings to one Kiyoshi; Foo
    gets its Deployment and a status. Not one request refused, in the pod's
    log or in the audit log; and the audit log holds the pod's own writes."""
    admin, work = driver.admin, driver.work
    pod = driver.the_pod()
    drive_hello(admin, work, driver.wait)
    drive_hikawa(admin, work, driver.wait)
    drive_foo(admin, work, driver.wait)
    # The pod that did it is the one that leads, unrestarted.
    assert lease_holder(admin, driver.installed) == pod["metadata"]["name"]
    driver.no_refusal_in_log(pod)
    account = service_account_name(driver.installed)
    records = audit_records(driver.cluster.audit_log, driver.audit_offset, account)
    denied = [describe(r) for r in records if rbac_refusal(r)]
    assert denied == [], "requests of the chart's ServiceAccount refused:\n" + "\n".join(denied)
    made = {(r["verb"], r.get("objectRef", {}).get("resource"), r.get("objectRef", {}).get("subresource"))
            for r in records}
    # (The adoption is a JSON patch of the stray Deployment: among the
    # deployments patches.)
    for expected in [("patch", "helloes", "status"), ("patch", "helloes", None), ("patch", "deployments", None),
                     ("delete", "deployments", None), ("patch", "kiyoshis", None), ("patch", "foos", "status"),
                     ("create", "events", None), ("update", "leases", None), ("watch", "hikawas", None)]:
        assert expected in made, f"no {expected} by {account} in the audit log: {sorted(made, key=str)}"
    # Those came from the pod: its projected token names it (the audit
    # records' user extra), and from the node's address (the pod's traffic
    # to the kubernetes Service leaves the node from it), not from this
    # machine's loopback where the tests run.
    pods = {name for r in records for name in r["user"].get("extra", {}).get("authentication.kubernetes.io/pod-name", [])}
    assert pods == {pod["metadata"]["name"]}, f"{account}'s requests were made by the pods {pods}"
    node = admin.ok("GET", f"/api/v1/nodes/{pod['spec']['nodeName']}")
    node_ips = {a["address"] for a in node["status"]["addresses"] if a["type"] == "InternalIP"}
    sources = {ip for r in records for ip in r.get("sourceIPs", [])}
    assert sources and sources <= node_ips | {pod["status"]["podIP"]}, \
        f"{account}'s requests came from {sources}, not from the node {node_ips}"


def test_the_service_account_is_refused_what_it_must_not_have(driver: Driver) -> None:
    """The ClusterRole names the controllers' resources and nothing else:
    the pod's ServiceAccount cannot read a Secret, anywhere."""
    admin, installed = driver.admin, driver.installed
    ns = installed.namespace
    name = installed.one("ServiceAccount")["metadata"]["name"]
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 600}}
    token = admin.create(f"/api/v1/namespaces/{ns}/serviceaccounts/{name}/token", request)["status"]["token"]
    client = admin.with_token(token)
    username = f"system:serviceaccount:{ns}:{name}"
    helm_secret = f"sh.helm.release.v1.{installed.release}.v1"
    for path in ["/api/v1/secrets", f"/api/v1/namespaces/{ns}/secrets", f"/api/v1/namespaces/{ns}/secrets/{helm_secret}"]:
        reply = client.call("GET", path)
        assert reply.status == 403, f"GET {path}: {reply.status}"
        assert reply.body["reason"] == "Forbidden" and username in reply.body["message"], reply.body
    # The Lease rule is for the chart's Lease only.
    assert client.call("GET", f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/someone-else").status == 403


def converged_state(admin: Kube, work: str) -> dict[str, tuple]:
    """What converged, by identity and generation: a restarted or new
    driver that rewrote any of it would change a generation or a uid."""
    state = {}
    for path in [api_path(HIKAWA_GROUP, "kiyoshis", work), api_path("apps/v1", "deployments", work),
                 api_path(HIKAWA_GROUP, "hikawas", work), api_path(FOO_GROUP, "foos", work)]:
        for obj in admin.items(path):
            meta = obj["metadata"]
            state[f"{path}/{meta['name']}"] = (meta["uid"], meta.get("generation"))
    return state


def test_helm_upgrade_with_a_changed_value_rolls_the_pod(driver: Driver, chart: helm_python.Chart) -> None:
    admin, work = driver.admin, driver.work
    before = driver.the_pod()
    state = converged_state(admin, work)
    assert any("/kiyoshis/" in key for key in state) and any("/foos/" in key for key in state), state
    driver.installed = upgrade(driver.cluster, chart, driver.installed, {"mode": "driver", "driver": {"kubeQps": 50}})
    after = driver.the_pod(not_named={before["metadata"]["name"]})
    env = {e["name"]: e.get("value") for e in after["spec"]["containers"][0]["env"]}
    assert env.get("METAHOOK_KUBE_QPS") == "50", env
    check_started_by_the_kubelet(driver.cluster, after)
    assert driver.leading(after) == after["metadata"]["name"]
    create_hello(admin, work, "after-upgrade", 1)
    hello_converged(admin, work, "after-upgrade", 1, driver.wait)
    now = converged_state(admin, work)
    assert {k: v for k, v in now.items() if k in state} == state, "the new pod rewrote what had converged"
    driver.no_refusal_in_log(after)


def test_a_deleted_pod_is_replaced_and_the_new_one_leads(driver: Driver) -> None:
    admin, installed, work = driver.admin, driver.installed, driver.work
    old = driver.the_pod()["metadata"]["name"]
    admin.delete(api_path("v1", "pods", installed.namespace, old))
    new = driver.the_pod(not_named={old})
    check_started_by_the_kubelet(driver.cluster, new)
    assert driver.leading(new) == new["metadata"]["name"]
    create_hello(admin, work, "after-deletion", 2)
    hello_converged(admin, work, "after-deletion", 2, driver.wait)
    driver.no_refusal_in_log(new)
    account = service_account_name(installed)
    denied = [describe(r) for r in audit_records(driver.cluster.audit_log, driver.audit_offset, account)
              if rbac_refusal(r)]
    assert denied == [], "requests of the chart's ServiceAccount refused:\n" + "\n".join(denied)


# What a release may leave in its namespace, looked for by the release's
# label and by name.
NAMESPACED = [("v1", "pods"), ("v1", "services"), ("v1", "configmaps"), ("v1", "secrets"),
              ("v1", "serviceaccounts"), ("apps/v1", "deployments"), ("apps/v1", "replicasets"),
              ("rbac.authorization.k8s.io/v1", "roles"), ("rbac.authorization.k8s.io/v1", "rolebindings"),
              ("networking.k8s.io/v1", "networkpolicies"), ("policy/v1", "poddisruptionbudgets"),
              ("coordination.k8s.io/v1", "leases"), ("discovery.k8s.io/v1", "endpointslices")]


def leftovers(admin: Kube, installed: Installed) -> list[str]:
    """Everything in the release's namespace but what Kubernetes puts in
    every namespace, and the release's cluster-scoped objects."""
    ns, release = installed.namespace, installed.release
    left = []
    for api_version, resource in NAMESPACED:
        for obj in admin.items(api_path(api_version, resource, ns)):
            name = obj["metadata"]["name"]
            if (resource, name) in {("serviceaccounts", "default"), ("configmaps", "kube-root-ca.crt")}:
                continue
            left.append(f"{resource}/{name}")
    for api_version, resource in [("rbac.authorization.k8s.io/v1", "clusterroles"),
                                  ("rbac.authorization.k8s.io/v1", "clusterrolebindings")]:
        for obj in admin.items(api_path(api_version, resource), labelSelector=f"app.kubernetes.io/instance={release}"):
            left.append(f"{resource}/{obj['metadata']['name']}")
    return left


def test_helm_uninstall_leaves_nothing_of_ours_behind(driver: Driver) -> None:
    """Run last: after it the release is gone (the fixture's uninstall then
    finds nothing). The work namespace's Hellos are deleted first, while the
    driver still runs their finalizers, as the README tells users to."""
    admin, installed, work = driver.admin, driver.installed, driver.work
    for hello in admin.items(api_path("fraim.co.jp/v1", "helloes", work)):
        admin.delete(api_path("fraim.co.jp/v1", "helloes", work, hello["metadata"]["name"]))
    driver.wait("the Hellos finalized", lambda: admin.items(api_path("fraim.co.jp/v1", "helloes", work)) == [])
    uninstall(driver.cluster, installed.release, installed.namespace)
    driver.uninstalled = True
    try:
        wait_for("nothing of the release left in its namespace or cluster-wide",
                 lambda: not leftovers(admin, installed))
    except AssertionError:
        assert leftovers(admin, installed) == [], "left behind by helm uninstall"
    # The CRDs in crds/ stay: Helm never deletes them. The templated ones
    # (conversion/) went with the release: these tests install them with
    # conversion.keepCRDs=false (chartcluster.RELEASE_OWNS_ITS_CRDS).
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    for path in crd_files():
        for crd in load_yaml_documents(path.read_text()):
            name = crd["metadata"]["name"]
            assert admin.get(f"{crds}/{name}") is not None, name
    for path in conversion_files():
        name = load_yaml_documents(path.read_text())[0]["metadata"]["name"]
        wait_for(f"CRD {name} deleted with the release", lambda: admin.get(f"{crds}/{name}") is None)
