"""The chart installed with real Helm (helm-python-sdk) into the real control
plane of tests/cluster/ (etcd, kube-apiserver and kube-controller-manager
v1.37.2 with RBAC and OwnerReferencesPermissionEnforcement, a kubelet
stand-in). Marked `cluster`: tests/chart/run.sh leaves them out unless asked
(`tests/chart/run.sh -m cluster`); tests/e2e/run.sh asks, with the control
plane up and METAHOOK_E2E_KUBECONFIG, METAHOOK_E2E_METAHOOK (the built
binary) and METAHOOK_CLUSTER_AUDIT_LOG set. Selected without them, they fail.

Driver mode: the chart is installed with mode=driver and the built
`metahook serve --drive` runs outside the cluster as the chart's
ServiceAccount (a TokenRequest token), with the settings the chart gives its
pod (the ConfigMap's files, the Deployment's environment). It drives a Hello,
a Hikawa and a Foo to completion; neither its log nor the API server's audit
log may hold a single refusal: the chart's ClusterRole and Role are enough.
The same token is refused what the roles must not grant (Secrets).

Metacontroller mode: Metacontroller itself is not available here (no image
runs: the kubelet stand-in starts no container). The test installs a
CompositeController CRD written below from docs/metacontroller.md §2 and checks
that the API server accepts the CompositeControllers the chart renders,
pointed at the release's Service; it cannot check that Metacontroller runs
them.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

import helm_python
import pytest

from conftest import CONTROLLERS, ROOT, load_yaml_documents
from kube import Kube, wait_for

pytestmark = pytest.mark.cluster

T = TypeVar("T")
# A wait on an outcome (Driver.wait_for).
Wait = Callable[[str, Callable[[], Any]], Any]

# What the tests need from tests/e2e/run.sh (or from `eval "$(tests/cluster/up.sh DIR)"`
# and exports by hand).
REQUIRED_ENV = {
    "METAHOOK_E2E_KUBECONFIG": "the control plane's admin kubeconfig (KUBECONFIG from tests/cluster/up.sh)",
    "METAHOOK_E2E_METAHOOK": "the metahook binary (cargo build --locked --bin metahook)",
    "METAHOOK_CLUSTER_AUDIT_LOG": "the API server's audit log (from tests/cluster/up.sh)",
}

HELM_TIMEOUT_SECONDS = 180
HELLO_FINALIZER = "metacontroller.io/compositecontroller-hello"


@dataclass
class Cluster:
    admin: Kube
    kubeconfig: Path
    metahook: Path
    audit_log: Path


@pytest.fixture(scope="session")
def cluster() -> Cluster:
    missing = [f"{name}: {what}" for name, what in REQUIRED_ENV.items() if not os.environ.get(name)]
    if missing:
        pytest.fail(
            "the cluster tests need the control plane; run tests/e2e/run.sh, or eval the output of "
            "tests/cluster/up.sh DIR and export:\n  " + "\n  ".join(missing),
            pytrace=False,
        )
    kubeconfig = Path(os.environ["METAHOOK_E2E_KUBECONFIG"])
    metahook = Path(os.environ["METAHOOK_E2E_METAHOOK"])
    assert os.access(metahook, os.X_OK), f"METAHOOK_E2E_METAHOOK={metahook} is not an executable"
    admin = Kube.from_kubeconfig(kubeconfig)
    version = admin.ok("GET", "/version")
    print(f"\n*** chart install tests against kube-apiserver {version['gitVersion']} at {admin.server}")
    return Cluster(admin, kubeconfig, metahook, Path(os.environ["METAHOOK_CLUSTER_AUDIT_LOG"]))


def unique(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(3)}"


def helm(cluster: Cluster, namespace: str) -> helm_python.Config:
    return helm_python.Config(kubeconfig_path=cluster.kubeconfig, namespace=namespace)


@dataclass
class Installed:
    release: str
    namespace: str
    objects: list[dict]

    def one(self, kind: str) -> dict:
        [found] = [o for o in self.objects if o["kind"] == kind]
        return found

    def all(self, kind: str) -> list[dict]:
        return [o for o in self.objects if o["kind"] == kind]


@contextlib.contextmanager
def installed(cluster: Cluster, chart: helm_python.Chart, values: dict, prefix: str) -> Iterator[Installed]:
    """`helm install --create-namespace --wait=watcher` of the chart into a
    fresh namespace; uninstalled (and the namespace deleted) afterwards,
    also when the install failed half-way."""
    release, namespace = unique(prefix), unique(f"chart-{prefix}")
    try:
        with helm(cluster, namespace) as config:
            summary = config.install(chart, release, values, namespace=namespace, create_namespace=True,
                                     wait="watcher", timeout=HELM_TIMEOUT_SECONDS)
        assert summary["status"] == "deployed", summary
        yield Installed(release, namespace, load_yaml_documents(summary["manifest"]))
    finally:
        with helm(cluster, namespace) as config:
            config.uninstall(release, wait="watcher", timeout=HELM_TIMEOUT_SECONDS, ignore_not_found=True)
        cluster.admin.delete(f"/api/v1/namespaces/{namespace}")


def deployment_ready(admin: Kube, namespace: str, name: str, replicas: int) -> dict | None:
    d = admin.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}")
    if d is None:
        return None
    status = d.get("status", {})
    done = (status.get("observedGeneration") == d["metadata"]["generation"]
            and status.get("readyReplicas") == replicas and status.get("updatedReplicas") == replicas)
    return d if done else None


# --------------------------------------------------------------------------
# Driver mode


@pytest.fixture(scope="module")
def driver_release(cluster: Cluster, chart: helm_python.Chart) -> Iterator[Installed]:
    # The chart's own Deployment is installed as is and waited for. Its pod
    # is bound and marked Ready by the kubelet stand-in although no container
    # runs (in a real cluster only the Lease holder is Ready), so it never
    # drives: the one driver is the process the test starts below, outside
    # the cluster, as the chart's ServiceAccount.
    with installed(cluster, chart, {"mode": "driver"}, "driver") as release:
        yield release


@dataclass
class ServiceAccount:
    name: str
    namespace: str
    client: Kube

    @property
    def username(self) -> str:
        return f"system:serviceaccount:{self.namespace}:{self.name}"


@pytest.fixture(scope="module")
def driver_account(cluster: Cluster, driver_release: Installed) -> ServiceAccount:
    return service_account(cluster, driver_release)


def service_account(cluster: Cluster, release: Installed) -> ServiceAccount:
    """A token of the ServiceAccount the chart's pod runs as, from the
    TokenRequest API (what `kubectl create token` calls)."""
    ns = release.namespace
    deployment = cluster.admin.ok("GET", f"/apis/apps/v1/namespaces/{ns}/deployments/"
                                  f"{release.one('Deployment')['metadata']['name']}")
    name = deployment["spec"]["template"]["spec"]["serviceAccountName"]
    assert name == release.one("ServiceAccount")["metadata"]["name"]
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
               "spec": {"expirationSeconds": 3600}}
    token = cluster.admin.create(f"/api/v1/namespaces/{ns}/serviceaccounts/{name}/token", request)["status"]["token"]
    account = ServiceAccount(name, ns, cluster.admin.with_token(token))
    # The token authenticates as the ServiceAccount: what follows is its RBAC.
    review = account.client.create("/apis/authentication.k8s.io/v1/selfsubjectreviews",
                                   {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    assert review["status"]["userInfo"]["username"] == account.username
    return account


def test_driver_mode_installs_and_is_ready(cluster: Cluster, driver_release: Installed) -> None:
    ns = driver_release.namespace
    kinds = sorted(o["kind"] for o in driver_release.objects)
    assert kinds == sorted(["ClusterRole", "ClusterRoleBinding", "ConfigMap", "Deployment", "NetworkPolicy",
                            "Role", "RoleBinding", "Service", "ServiceAccount"])
    for obj in driver_release.objects:
        name = obj["metadata"]["name"]
        scope = None if obj["kind"] in ("ClusterRole", "ClusterRoleBinding") else ns
        path = api_path(obj["apiVersion"], PLURALS[obj["kind"]], scope, name)
        assert cluster.admin.get(path) is not None, f"{obj['kind']} {name} is not in the cluster"
    deployment = driver_release.one("Deployment")["metadata"]["name"]
    assert deployment_ready(cluster.admin, ns, deployment, 1), "helm waited, so the Deployment is ready"


def api_path(api_version: str, resource: str, namespace: str | None = None, name: str | None = None) -> str:
    prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    path = prefix + (f"/namespaces/{namespace}" if namespace else "") + f"/{resource}"
    return path + (f"/{name}" if name else "")


PLURALS = {
    "ClusterRole": "clusterroles", "ClusterRoleBinding": "clusterrolebindings", "ConfigMap": "configmaps",
    "Deployment": "deployments", "NetworkPolicy": "networkpolicies", "PodDisruptionBudget": "poddisruptionbudgets",
    "Role": "roles", "RoleBinding": "rolebindings", "Service": "services", "ServiceAccount": "serviceaccounts",
    "CompositeController": "compositecontrollers",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Driver:
    """`metahook` run the way the chart runs it in its pod, outside the
    cluster; stdout and stderr go to `log`."""

    def __init__(self, args: list[str], env: dict[str, str], log: Path, port: int) -> None:
        self.log = log
        self.port = port
        self._log = log.open("wb")
        self.process = subprocess.Popen(args, env=env, stdin=subprocess.DEVNULL, stdout=self._log,
                                        stderr=subprocess.STDOUT)

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def ready(self) -> bool:
        if self.process.poll() is not None:
            raise AssertionError(f"metahook exited with {self.process.returncode}:\n{self.text()[-4000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/readyz", timeout=5) as response:
                return response.status == 200
        except OSError:
            return False

    def refusals(self) -> list[str]:
        return [line for line in self.text().splitlines() if REFUSAL.search(line) and TERMINATING not in line]

    def wait_for(self, what: str, check: Callable[[], T | None]) -> T:
        """kube.wait_for, failing at once when the driver has exited or been
        refused something (instead of at the deadline)."""

        def checked() -> T | None:
            if self.process.poll() is not None:
                raise AssertionError(f"metahook exited with {self.process.returncode} while waiting for {what}")
            if refused := self.refusals():
                raise AssertionError(f"the API server refused the driver while waiting for {what}:\n"
                                     + "\n".join(refused[:5]))
            return check()

        return wait_for(what, checked)

    def stop(self) -> int:
        """SIGTERM, as the kubelet stops a pod; the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()
        return self.process.returncode


def pod_command(cluster: Cluster, installed: Installed, account: ServiceAccount, pod_name: str,
                workdir: Path) -> tuple[list[str], dict[str, str], int]:
    """The live Deployment's container, as a local command: its args, its
    environment with the downward-API fields filled in as the kubelet would,
    METAHOOK_CONTROLLERS pointing at a copy of the mounted ConfigMap's files,
    a loopback listen address, and a kubeconfig holding the ServiceAccount's
    token instead of the mounted one."""
    ns = installed.namespace
    name = installed.one("Deployment")["metadata"]["name"]
    pod = cluster.admin.ok("GET", f"/apis/apps/v1/namespaces/{ns}/deployments/{name}")["spec"]["template"]["spec"]
    [container] = pod["containers"]
    fields = {"metadata.name": pod_name, "metadata.namespace": ns}
    env: dict[str, str] = {}
    for entry in container.get("env", []):
        if "value" in entry:
            env[entry["name"]] = entry["value"]
        else:
            env[entry["name"]] = fields[entry["valueFrom"]["fieldRef"]["fieldPath"]]
    assert env["METAHOOK_LEADER_ELECTION"] == "true", env

    # The directory METAHOOK_CONTROLLERS names is a ConfigMap volume: copy
    # its files (every key, as the volume has no `items`).
    [mount] = [m for m in container["volumeMounts"] if m["mountPath"] == env["METAHOOK_CONTROLLERS"]]
    [volume] = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    assert "items" not in volume["configMap"], volume
    config_map = cluster.admin.ok("GET", f"/api/v1/namespaces/{ns}/configmaps/{volume['configMap']['name']}")
    controllers = workdir / "controllers"
    controllers.mkdir()
    for file, text in config_map["data"].items():
        (controllers / file).write_text(text)
    assert sorted(p.stem for p in controllers.iterdir()) == CONTROLLERS
    env["METAHOOK_CONTROLLERS"] = str(controllers)

    port = free_port()
    env["METAHOOK_LISTEN"] = f"127.0.0.1:{port}"
    kubeconfig = workdir / "serviceaccount.kubeconfig"
    kubeconfig.write_text(account.client.kubeconfig(account.username, ns))
    # Nothing of this process's own environment (an admin KUBECONFIG)
    # reaches the driver: only the pod's settings and the token.
    env.update({"KUBECONFIG": str(kubeconfig), "HOME": str(workdir), "PATH": os.environ.get("PATH", "")})
    if "RUST_LOG" in os.environ:
        env["RUST_LOG"] = os.environ["RUST_LOG"]
    return [str(cluster.metahook), *container["args"]], env, port


# A refusal in the driver's log: the API server's 403 / Forbidden, however
# it is worded. The number stands alone (not part of a digit run, a decimal
# fraction such as a timestamp's ".403", or a name such as "x-zundoko-403").
REFUSAL = re.compile(r"forbidden|(?<![\w.-])403(?![\w.-])", re.IGNORECASE)
# The one 403 that is no RBAC matter: the NamespaceLifecycle admission
# plugin refuses anything new in a namespace being deleted (an earlier
# test's, whose objects the driver's cluster-wide watches still see).
TERMINATING = "because it is being terminated"


def rbac_refusal(record: dict) -> bool:
    status = record.get("responseStatus", {})
    causes = status.get("details", {}).get("causes", [])
    return status.get("code") == 403 and not any(c.get("reason") == "NamespaceTerminating" for c in causes)


def audit_records(path: Path, offset: int, username: str) -> list[dict]:
    """The API server's audit records (tests/cluster: Metadata level, every
    request) of `username`, written after `offset`."""
    records = []
    quoted = json.dumps(username)
    with path.open("rb") as f:
        f.seek(offset)
        for line in f:
            if quoted.encode() not in line:
                continue
            record = json.loads(line)
            if record.get("user", {}).get("username") == username:
                records.append(record)
    return records


def describe(record: dict) -> str:
    ref = record.get("objectRef", {})
    resource = ref.get("resource", "") + (f"/{ref['subresource']}" if ref.get("subresource") else "")
    return (f"{record['verb']} {ref.get('apiGroup') or 'core'} {resource} {ref.get('namespace', '')}/"
            f"{ref.get('name', '')} -> {record.get('responseStatus', {}).get('code')}")


def test_driver_runs_as_the_chart_service_account(cluster: Cluster, driver_release: Installed,
                                                  driver_account: ServiceAccount, tmp_path: Path) -> None:
    admin = cluster.admin
    pod_name = unique("outside")
    args, env, port = pod_command(cluster, driver_release, driver_account, pod_name, tmp_path)
    audit_offset = cluster.audit_log.stat().st_size
    work = unique("chart-work")
    admin.create("/api/v1/namespaces", {"metadata": {"name": work}})
    driver = Driver(args, env, tmp_path / "metahook.log", port)
    try:
        driver.wait_for("the driver to be ready (the Lease held, caches synced)", driver.ready)
        lease_name = env["METAHOOK_LEADER_ELECTION_LEASE"]
        lease_path = f"/apis/coordination.k8s.io/v1/namespaces/{driver_release.namespace}/leases/{lease_name}"
        lease = admin.ok("GET", lease_path)
        assert lease["spec"]["holderIdentity"] == pod_name, "the driver outside leads, and only it"

        drive_hello(admin, work, driver.wait_for)
        drive_hikawa(admin, work, driver.wait_for)
        drive_foo(admin, work, driver.wait_for)
    finally:
        status = driver.stop()
        log = driver.text()
        print(f"--- driver log ({driver.log})\n{log[-6000:]}")
        # After the driver stopped: writes into a namespace being deleted
        # are refused (403), and that is no RBAC matter.
        delete_work_namespace(admin, work)
    assert status == 0, f"metahook exited with {status} after SIGTERM"
    # Released on SIGTERM (a patch the Role grants), for a standby to take.
    assert not admin.ok("GET", lease_path)["spec"].get("holderIdentity"), "the Lease was not released"

    refusals = driver.refusals()
    assert refusals == [], "the API server refused the driver something:\n" + "\n".join(refusals[:20])

    records = audit_records(cluster.audit_log, audit_offset, driver_account.username)
    denied = [describe(r) for r in records if rbac_refusal(r)]
    assert denied == [], "requests of the chart's ServiceAccount refused:\n" + "\n".join(denied)
    # Not vacuous: the audit log holds the driver's own writes.
    made = {(r["verb"], r.get("objectRef", {}).get("resource"), r.get("objectRef", {}).get("subresource"))
            for r in records}
    # (The adoption is a JSON patch of the stray Deployment: among the
    # deployments patches.)
    for expected in [("patch", "helloes", "status"), ("patch", "helloes", None), ("patch", "deployments", None),
                     ("delete", "deployments", None), ("patch", "kiyoshis", None), ("patch", "foos", "status"),
                     ("create", "events", None), ("patch", "leases", None), ("watch", "hikawas", None)]:
        assert expected in made, f"no {expected} by {driver_account.username} in the audit log: {sorted(made, key=str)}"


def delete_work_namespace(admin: Kube, work: str) -> None:
    """Deletes `work`; a Hello left by a failure keeps its finalizer, which no
    driver removes any more, so it is taken off first."""
    for hello in admin.items(api_path("fraim.co.jp/v1", "helloes", work)):
        admin.call("PATCH", api_path("fraim.co.jp/v1", "helloes", work, hello["metadata"]["name"]),
                   {"metadata": {"finalizers": None}}, content_type="application/merge-patch+json")
    admin.delete(f"/api/v1/namespaces/{work}")


def controlled_by(obj: dict, uid: str) -> bool:
    return any(r["uid"] == uid and r.get("controller") for r in obj["metadata"].get("ownerReferences", []))


def drive_hello(admin: Kube, ns: str, wait: Wait) -> None:
    """A Deployment, a status that caught up with it, Events; then deletion
    runs finalize: the Deployment goes, the finalizer goes, the Hello goes."""
    hellos = api_path("fraim.co.jp/v1", "helloes", ns)
    hello = admin.create(hellos, {"apiVersion": "fraim.co.jp/v1", "kind": "Hello",
                                  "metadata": {"name": "hello"}, "spec": {"replicas": 2}})
    uid = hello["metadata"]["uid"]
    deployment_path = api_path("apps/v1", "deployments", ns, "hello")
    deployment = wait("the Hello's Deployment", lambda: admin.get(deployment_path))
    assert controlled_by(deployment, uid), deployment["metadata"].get("ownerReferences")
    assert deployment["spec"]["replicas"] == 2

    def caught_up() -> dict | None:
        h = admin.ok("GET", f"{hellos}/hello")
        status = h.get("status", {})
        ok = status.get("observedGeneration") == h["metadata"]["generation"] and status.get("readyReplicas") == 2
        return h if ok else None

    caught = wait("the Hello's status: readyReplicas 2 at its generation", caught_up)
    assert HELLO_FINALIZER in caught["metadata"].get("finalizers", [])

    # An orphan matching the Hello's selector is adopted (an owner reference
    # patched in, blockOwnerDeletion and all) and, as the hook does not
    # desire it, deleted.
    admin.create(api_path("apps/v1", "deployments", ns), {
        "metadata": {"name": "stray", "labels": {"controller-uid": uid}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "stray"}},
                 "template": {"metadata": {"labels": {"app": "stray"}},
                              "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}})
    wait("the adopted stray Deployment to be deleted",
             lambda: admin.get(api_path("apps/v1", "deployments", ns, "stray")) is None)
    events = api_path("events.k8s.io/v1", "events", ns)
    wait("an Event about the Hello",
             lambda: [e for e in admin.items(events) if e.get("regarding", {}).get("uid") == uid])

    admin.ok("DELETE", f"{hellos}/hello")
    wait("finalize to delete the Deployment", lambda: admin.get(deployment_path) is None)
    wait("the finalizer to go, and the Hello with it", lambda: admin.get(f"{hellos}/hello") is None)


def drive_hikawa(admin: Kube, ns: str, wait: Wait) -> None:
    """Zundokos until a Kiyoshi: the status says so, and there is exactly one."""
    group = "zundokokiyoshi.kaitoy.github.com/v1beta1"
    hikawa = admin.create(api_path(group, "hikawas", ns), {
        "apiVersion": group, "kind": "Hikawa", "metadata": {"name": "hikawa"}, "spec": {"intervalMillis": 10}})
    uid = hikawa["metadata"]["uid"]

    def kiyoshied() -> dict | None:
        status = admin.ok("GET", api_path(group, "hikawas", ns, "hikawa")).get("status", {})
        return status if status.get("kiyoshied") is True else None

    status = wait("the Hikawa to say Kiyoshi!", kiyoshied)
    assert status["song"].endswith("Zun Zun Zun Zun Doko Kiyoshi!"), status
    kiyoshis = admin.items(api_path(group, "kiyoshis", ns))
    assert len(kiyoshis) == 1 and controlled_by(kiyoshis[0], uid), kiyoshis


def drive_foo(admin: Kube, ns: str, wait: Wait) -> None:
    """The Deployment spec.deploymentName names, and availableReplicas."""
    group = "samplecontroller.k8s.io/v1alpha1"
    foos = api_path(group, "foos", ns)
    foo = admin.create(foos, {"apiVersion": group, "kind": "Foo", "metadata": {"name": "example-foo"},
                              "spec": {"deploymentName": "foo-deployment", "replicas": 2}})
    uid = foo["metadata"]["uid"]
    deployment = wait("the Foo's Deployment, ready",
                          lambda: deployment_ready(admin, ns, "foo-deployment", 2))
    assert controlled_by(deployment, uid), deployment["metadata"].get("ownerReferences")

    def available() -> dict | None:
        f = admin.ok("GET", f"{foos}/example-foo")
        status = f.get("status", {})
        ok = status.get("observedGeneration") == f["metadata"]["generation"] and status.get("availableReplicas") == 2
        return status if ok else None

    wait("the Foo's status: availableReplicas 2 at its generation", available)


def test_driver_service_account_is_refused_what_it_must_not_have(driver_release: Installed,
                                                                 driver_account: ServiceAccount) -> None:
    """The ClusterRole names the controllers' resources and nothing else:
    the same token that drives cannot read a Secret, anywhere."""
    client, ns = driver_account.client, driver_release.namespace
    helm_secret = f"sh.helm.release.v1.{driver_release.release}.v1"
    for path in ["/api/v1/secrets", f"/api/v1/namespaces/{ns}/secrets", f"/api/v1/namespaces/{ns}/secrets/{helm_secret}"]:
        reply = client.call("GET", path)
        assert reply.status == 403, f"GET {path}: {reply.status}"
        assert reply.body["reason"] == "Forbidden" and driver_account.username in reply.body["message"], reply.body
    # The Lease rule is for the chart's Lease only.
    other = f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/someone-else"
    assert client.call("GET", other).status == 403


# --------------------------------------------------------------------------
# Metacontroller mode


def _hook_schema() -> dict:
    """One hook (docs/metacontroller.md §2): version and webhook; the connection
    settings are kept whole (preserve-unknown-fields)."""
    opaque = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return {
        "type": "object",
        "required": ["webhook"],
        "properties": {
            "version": {"type": "string", "enum": ["v1", "v2"]},
            "webhook": {
                "type": "object",
                "properties": {
                    "url": {"type": "string"},
                    "timeout": {"type": "string"},
                    "path": {"type": "string"},
                    "service": {
                        "type": "object",
                        "required": ["name", "namespace"],
                        "properties": {
                            "name": {"type": "string"},
                            "namespace": {"type": "string"},
                            "port": {"type": "integer", "format": "int32"},
                            "protocol": {"type": "string"},
                        },
                    },
                    "etag": opaque,
                    "responseUnMarshallMode": {"type": "string"},
                    "caBundle": opaque,
                    "clientTLS": opaque,
                    "authorization": opaque,
                    "basicAuth": opaque,
                },
            },
        },
    }


def compositecontroller_crd() -> dict:
    """CompositeController (metacontroller.k8s.io/v1alpha1) as
    docs/metacontroller.md §2 describes it: cluster-scoped, a status
    subresource, a structural schema with every spec field that section
    lists."""
    opaque = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    label_selector = {
        "type": "object",
        "properties": {
            "matchLabels": {"type": "object", "additionalProperties": {"type": "string"}},
            "matchExpressions": {"type": "array", "items": {
                "type": "object", "required": ["key", "operator"],
                "properties": {"key": {"type": "string"}, "operator": {"type": "string"},
                               "values": {"type": "array", "items": {"type": "string"}}}}},
        },
    }
    update_methods = ["OnDelete", "Recreate", "InPlace", "RollingRecreate", "RollingInPlace"]
    spec = {
        "type": "object",
        "required": ["parentResource", "hooks"],
        "properties": {
            "parentResource": {
                "type": "object",
                "required": ["apiVersion", "resource"],
                "properties": {
                    "apiVersion": {"type": "string"},
                    "resource": {"type": "string"},
                    "labelSelector": label_selector,
                    "revisionHistory": {"type": "object", "properties": {
                        "fieldPaths": {"type": "array", "items": {"type": "string"}}}},
                    "ignoreStatusChanges": {"type": "boolean"},
                },
            },
            "childResources": {"type": "array", "items": {
                "type": "object",
                "required": ["apiVersion", "resource"],
                "properties": {
                    "apiVersion": {"type": "string"},
                    "resource": {"type": "string"},
                    "updateStrategy": {"type": "object", "properties": {
                        "method": {"type": "string", "enum": update_methods},
                        "statusChecks": {"type": "object", "properties": {
                            "conditions": {"type": "array", "items": {
                                "type": "object", "required": ["type"],
                                "properties": {"type": {"type": "string"}, "status": {"type": "string"},
                                               "reason": {"type": "string"}}}}}},
                    }},
                },
            }},
            "resyncPeriodSeconds": {"type": "integer", "format": "int32"},
            "generateSelector": {"type": "boolean"},
            "hooks": {"type": "object", "properties": {
                name: _hook_schema() for name in ("sync", "finalize", "customize", "preUpdateChild", "postUpdateChild")
            }},
            "endpointConfigs": {"type": "array", "items": {
                "type": "object", "required": ["host"],
                "properties": {"host": {"type": "string"}, "caBundle": opaque, "clientTLS": opaque,
                               "authorization": opaque, "basicAuth": opaque}}},
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": "compositecontrollers.metacontroller.k8s.io",
            # *.k8s.io groups are protected: the API server wants this
            # annotation on any CRD in one (as on Metacontroller's own).
            "annotations": {"api-approved.kubernetes.io": "unapproved, request not yet submitted"},
        },
        "spec": {
            "group": "metacontroller.k8s.io",
            "scope": "Cluster",
            "names": {"kind": "CompositeController", "listKind": "CompositeControllerList",
                      "plural": "compositecontrollers", "singular": "compositecontroller",
                      "shortNames": ["cc", "cctl"]},
            "versions": [{
                "name": "v1alpha1", "served": True, "storage": True,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "required": ["spec"],
                    "properties": {
                        "apiVersion": {"type": "string"},
                        "kind": {"type": "string"},
                        "metadata": {"type": "object"},
                        "spec": spec,
                        "status": opaque,
                    },
                }},
            }],
        },
    }


CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
COMPOSITECONTROLLERS = "/apis/metacontroller.k8s.io/v1alpha1/compositecontrollers"


@pytest.fixture(scope="module")
def compositecontroller_crd_installed(cluster: Cluster) -> Iterator[None]:
    crd = compositecontroller_crd()
    name = crd["metadata"]["name"]
    cluster.admin.ok("PATCH", f"{CRDS}/{name}", crd, query={"fieldManager": "metahook-chart-test", "force": "true"},
                     content_type="application/apply-patch+yaml")

    def established() -> bool:
        conditions = (cluster.admin.ok("GET", f"{CRDS}/{name}").get("status") or {}).get("conditions") or []
        return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)

    wait_for("the CompositeController CRD to be established", established)
    yield
    cluster.admin.delete(f"{CRDS}/{name}")
    # Gone for good (its objects removed first), so that a run after this
    # one on the same control plane creates it afresh.
    wait_for("the CompositeController CRD to be deleted", lambda: cluster.admin.get(f"{CRDS}/{name}") is None)


@pytest.fixture(scope="module")
def metacontroller_release(cluster: Cluster, chart: helm_python.Chart,
                           compositecontroller_crd_installed: None) -> Iterator[Installed]:
    with installed(cluster, chart, {}, "mc") as release:
        yield release


def test_metacontroller_mode_compositecontrollers_are_accepted(cluster: Cluster,
                                                              metacontroller_release: Installed) -> None:
    admin, release, ns = cluster.admin, metacontroller_release.release, metacontroller_release.namespace
    service = metacontroller_release.one("Service")
    fullname, port = service["metadata"]["name"], service["spec"]["ports"][0]["port"]
    live_service = admin.ok("GET", api_path("v1", "services", ns, fullname))
    assert live_service["spec"]["ports"][0]["port"] == port
    deployment = metacontroller_release.one("Deployment")["metadata"]["name"]
    assert deployment_ready(admin, ns, deployment, 2), "helm waited, so the hook servers are ready"

    stored = {cc["metadata"]["name"]: cc for cc in admin.items(
        COMPOSITECONTROLLERS, labelSelector=f"app.kubernetes.io/instance={release}")}
    assert sorted(stored) == CONTROLLERS
    rendered = {cc["metadata"]["name"]: cc for cc in metacontroller_release.all("CompositeController")}
    for name, cc in stored.items():
        # The server kept every field the chart rendered (nothing pruned).
        assert cc["spec"] == rendered[name]["spec"], name
        for hook, spec in cc["spec"]["hooks"].items():
            assert spec["webhook"]["service"] == {"name": fullname, "namespace": ns, "port": port}, (name, hook)
            assert spec["webhook"]["path"] == f"/{name}/{hook}"


def test_metacontroller_crd_is_not_vacuous(cluster: Cluster, compositecontroller_crd_installed: None) -> None:
    """The CRD above refuses what docs/metacontroller.md §2 forbids, so its
    accepting the chart's CompositeControllers means something."""
    source = load_yaml_documents((ROOT / "metacontroller" / "hello.yaml").read_text())[0]
    for what, mutate in {
        "hook version v3": lambda cc: cc["spec"]["hooks"]["sync"].update(version="v3"),
        "update method Rolling": lambda cc: cc["spec"]["childResources"][0]["updateStrategy"].update(method="Rolling"),
        "no parentResource": lambda cc: cc["spec"].pop("parentResource"),
        "string generateSelector": lambda cc: cc["spec"].update(generateSelector="true"),
    }.items():
        bad = copy.deepcopy(source)
        bad["metadata"]["name"] = unique("refused")
        mutate(bad)
        reply = cluster.admin.call("POST", COMPOSITECONTROLLERS, bad)
        assert reply.status == 422, f"{what}: {reply.status} {reply.body}"
