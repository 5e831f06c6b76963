"""Shared machinery of the chart's cluster tests (test_install.py,
test_aggregated_api.py, test_metacontroller_mode.py): the chart installed
with real Helm (helm-python-sdk) exactly as users install it, onto the real
single node of tests/cluster/ (kubelet, containerd with runc, CNI bridge,
kube-proxy, CoreDNS), running metahook's image built from this repository
(scripts/image.sh DIR loads it into the node's containerd).

Every wait is bounded (kube.wait_for) and, when it gives up, says what it
waited for and prints the pods' describe-like status, their logs and the
namespace's events: a failure carries what the cluster saw.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

import helm_python
import pytest

from conftest import ROOT, load_yaml_documents
from kube import Kube, wait_for

T = TypeVar("T")

# What the tests need from tests/e2e/run.sh (or from `eval "$(tests/cluster/up.sh DIR)"`,
# `scripts/image.sh DIR` and exports by hand).
REQUIRED_ENV = {
    "METAHOOK_E2E_KUBECONFIG": "the cluster's admin kubeconfig (KUBECONFIG from tests/cluster/up.sh)",
    "METAHOOK_E2E_IMAGE": "metahook's image, loaded into the node (the reference scripts/image.sh DIR prints)",
    "METAHOOK_CLUSTER_AUDIT_LOG": "the API server's audit log (from tests/cluster/up.sh)",
    "METAHOOK_CLUSTER_DIR": "the cluster's directory (tests/cluster/up.sh DIR): the node's containerd socket",
}

HELM_TIMEOUT_SECONDS = 180
HELLO_FINALIZER = "metacontroller.io/compositecontroller-hello"
# Served by the node's preloaded image (tests/cluster/node/hello-server): a
# plain-text HTTP server on :80. The Hello's default image (nginxdemos/hello)
# cannot be pulled here: no registry is reachable.
HELLO_IMAGE = "localhost/metahook-test/hello:v1"
NODE_NAME = "metahook-node"
NODE_NETNS = "metahook-node"
# The chart's securityContext / podSecurityContext (chart/values.yaml).
CHART_UID = 65532


@dataclass
class Cluster:
    admin: Kube
    kubeconfig: Path
    audit_log: Path
    dir: Path
    image: str
    kubectl_bin: str
    ctr_bin: Path

    @property
    def image_values(self) -> dict:
        """The chart's image values for METAHOOK_E2E_IMAGE: repository and
        tag, never pulled (the node has it; no registry is reachable)."""
        repository, tag = split_image(self.image)
        return {"image": {"repository": repository, "tag": tag, "pullPolicy": "Never"}}

    def ctr(self, *args: str) -> str:
        sock = os.environ.get("METAHOOK_CLUSTER_CONTAINERD") or self.dir / "containerd" / "containerd.sock"
        done = subprocess.run([str(self.ctr_bin), "-a", str(sock), "-n", "k8s.io", *args],
                              capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            raise AssertionError(f"ctr {' '.join(args)} exited {done.returncode}: {done.stderr}")
        return done.stdout


def split_image(ref: str) -> tuple[str, str]:
    """repository:tag, the tag after the last colon past the last slash."""
    slash = ref.rfind("/")
    colon = ref.rfind(":")
    assert colon > slash, f"METAHOOK_E2E_IMAGE={ref} has no tag"
    return ref[:colon], ref[colon + 1:]


@pytest.fixture(scope="session")
def cluster() -> Cluster:
    missing = [f"{name}: {what}" for name, what in REQUIRED_ENV.items() if not os.environ.get(name)]
    if missing:
        pytest.fail(
            "the cluster tests need the real node; run tests/e2e/run.sh, or eval the output of "
            "tests/cluster/up.sh DIR, run scripts/image.sh DIR, and export:\n  " + "\n  ".join(missing),
            pytrace=False,
        )
    kubeconfig = Path(os.environ["METAHOOK_E2E_KUBECONFIG"])
    kubectl_bin = (os.environ.get("METAHOOK_E2E_KUBECTL") or shutil.which("kubectl")
                   or str(ROOT / "target/cluster/bin/kubectl"))
    ctr_bin = Path(os.environ.get("METAHOOK_CTR") or ROOT / "target/cluster/bin/ctr")
    if not ctr_bin.exists():
        # The node's build (tests/cluster/node/build.sh links it here).
        ctr_bin = ROOT / "target/cluster/node/bin/ctr"
    assert os.access(ctr_bin, os.X_OK), f"no ctr at {ctr_bin} (tests/cluster/node/build.sh builds it)"
    admin = Kube.from_kubeconfig(kubeconfig)
    version = admin.ok("GET", "/version")
    found = Cluster(admin, kubeconfig, Path(os.environ["METAHOOK_CLUSTER_AUDIT_LOG"]),
                    Path(os.environ["METAHOOK_CLUSTER_DIR"]), os.environ["METAHOOK_E2E_IMAGE"], kubectl_bin, ctr_bin)
    node = admin.get(f"/api/v1/nodes/{NODE_NAME}")
    assert node is not None, f"no Node {NODE_NAME}: these tests need the real node (not tests/cluster/up.sh --standin)"
    images = found.ctr("images", "ls", "-q").split()
    assert found.image in images, (f"{found.image} is not in the node's containerd: scripts/image.sh "
                                   f"{found.dir} loads it (has: {images})")
    print(f"\n*** chart cluster tests against kube-apiserver {version['gitVersion']} at {admin.server}, "
          f"node {NODE_NAME} ({node['status']['nodeInfo']['containerRuntimeVersion']}), image {found.image}")
    return found


def unique(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(3)}"


def kubectl(cluster: Cluster, *args: str, check: bool = True, timeout: int = 60) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([cluster.kubectl_bin, "--kubeconfig", str(cluster.kubeconfig), *args],
                          capture_output=True, text=True, timeout=timeout)
    if check and done.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} exited {done.returncode}:\n{done.stderr}")
    return done


def helm(cluster: Cluster, namespace: str) -> helm_python.Config:
    return helm_python.Config(kubeconfig_path=cluster.kubeconfig, namespace=namespace)


def deep_merge(base: dict, extra: dict) -> dict:
    out = dict(base)
    for key, value in extra.items():
        out[key] = deep_merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


# --------------------------------------------------------------------------
# What the cluster saw, for failure messages


def report(cluster: Cluster, namespace: str, selector: str | None = None) -> str:
    """The namespace's Deployments and ReplicaSets, `kubectl describe pods`
    (status, conditions, container states, the pod's events), each pod's
    log (and its previous container's, after a restart), and the
    namespace's events."""
    sel = ["-l", selector] if selector else []
    parts = [f"===== pods in {namespace}" + (f" ({selector})" if selector else "")]
    for args in (["get", "deployments,replicasets", "-n", namespace, "-o", "wide", *sel],
                 ["get", "pods", "-n", namespace, "-o", "wide", *sel],
                 ["describe", "pods", "-n", namespace, *sel]):
        done = kubectl(cluster, *args, check=False)
        parts.append(f"$ kubectl {' '.join(args)}\n{done.stdout}{done.stderr}")
    names = kubectl(cluster, "get", "pods", "-n", namespace, *sel, "-o", "name", check=False).stdout.split()
    for name in names:
        for previous in ([], ["--previous"]):
            done = kubectl(cluster, "logs", "-n", namespace, name, "--all-containers", "--tail=80", *previous,
                           check=False)
            if previous and done.returncode != 0:
                continue
            parts.append(f"$ kubectl logs -n {namespace} {name} {' '.join(previous)}\n{done.stdout}{done.stderr}")
    done = kubectl(cluster, "get", "events", "-n", namespace, "--sort-by=.lastTimestamp", check=False)
    parts.append(f"$ kubectl get events -n {namespace}\n" + "\n".join(done.stdout.splitlines()[-40:]) + done.stderr)
    parts.append(node_state(cluster))
    return "\n".join(parts)


def node_state(cluster: Cluster) -> str:
    """The node's taints and conditions, and the free space where its
    kubelet and containerd keep their files: a pod "Pending" on "untolerated
    taint(s)" names no taint, and a disk near full taints the node."""
    template = ("{range .items[*]}{.metadata.name} taints: {.spec.taints}{'\\n'}"
                "{range .status.conditions[*]}  {.type}={.status} {.reason}: {.message}{'\\n'}{end}{end}")
    done = kubectl(cluster, "get", "nodes", "-o", f"jsonpath={template}", check=False)
    usage = shutil.disk_usage(cluster.dir)
    return (f"$ kubectl get nodes (taints, conditions)\n{done.stdout}{done.stderr}"
            f"disk under {cluster.dir}: {usage.free / 2**30:.1f} GiB free of {usage.total / 2**30:.1f}")


def report_if_failed(request: Any, cluster: Cluster, *where: tuple[str, str | None]) -> None:
    """After a test: when it failed, report() of each (namespace, selector),
    printed into the test's captured output (shown with the failure)."""
    failed = getattr(request.node, "rep_call", None)
    if failed is not None and failed.failed:
        for namespace, selector in where:
            print(report(cluster, namespace, selector))


def waiter(cluster: Cluster, namespace: str, selector: str | None = None,
           also: Callable[[], str] | None = None) -> Callable[..., Any]:
    """kube.wait_for whose failure message carries report() of `namespace`
    (and whatever `also` returns)."""

    def wait(what: str, check: Callable[[], T | None], deadline: float | None = None) -> T:
        try:
            return wait_for(what, check, **({"deadline": deadline} if deadline else {}))
        except AssertionError as e:
            extra = also() if also else ""
            raise AssertionError(f"{e}\n{report(cluster, namespace, selector)}\n{extra}") from None

    return wait


# --------------------------------------------------------------------------
# Installing the chart


@dataclass
class Installed:
    release: str
    namespace: str
    objects: list[dict]
    values: dict

    def one(self, kind: str) -> dict:
        [found] = [o for o in self.objects if o["kind"] == kind]
        return found

    def all(self, kind: str) -> list[dict]:
        return [o for o in self.objects if o["kind"] == kind]

    @property
    def selector(self) -> str:
        """The Deployment's pod selector, as a label selector string."""
        labels = self.one("Deployment")["spec"]["selector"]["matchLabels"]
        return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))

    @property
    def deployment(self) -> str:
        return self.one("Deployment")["metadata"]["name"]


# The releases here follow one another on one node, and each installs the
# CRDs of more than one version (chart/templates/crds-with-conversion.yaml): kept
# at uninstall, a CRD would still be the last release's, and the next could
# not install it (Helm refuses an object another release owns).
RELEASE_OWNS_ITS_CRDS = {"conversion": {"keepCRDs": False}}


def install(cluster: Cluster, chart: helm_python.Chart, values: dict, release: str, namespace: str,
            wait: str | None = "watcher") -> Installed:
    """`helm install --create-namespace --wait=watcher`, with the image
    values of METAHOOK_E2E_IMAGE; a failed install says what the pods did.
    wait=None for releases Helm cannot wait for (driver mode with standby
    replicas, which are never Ready): the caller waits for what it needs."""
    values = deep_merge(deep_merge(cluster.image_values, RELEASE_OWNS_ITS_CRDS), values)
    try:
        with helm(cluster, namespace) as config:
            summary = config.install(chart, release, values, namespace=namespace, create_namespace=True,
                                     wait=wait, timeout=HELM_TIMEOUT_SECONDS)
    except Exception as e:  # helm_python's errors; the cluster's side of it below
        raise AssertionError(f"helm install {release}: {e}\n{report(cluster, namespace)}") from None
    assert summary["status"] == "deployed", summary
    return Installed(release, namespace, load_yaml_documents(summary["manifest"]), values)


def upgrade(cluster: Cluster, chart: helm_python.Chart, installed: Installed, values: dict) -> Installed:
    values = deep_merge(deep_merge(cluster.image_values, RELEASE_OWNS_ITS_CRDS), values)
    try:
        with helm(cluster, installed.namespace) as config:
            summary = config.upgrade(chart, installed.release, values, namespace=installed.namespace,
                                     wait="watcher", timeout=HELM_TIMEOUT_SECONDS)
    except Exception as e:
        raise AssertionError(f"helm upgrade {installed.release}: {e}\n{report(cluster, installed.namespace)}") from None
    assert summary["status"] == "deployed", summary
    return Installed(installed.release, installed.namespace, load_yaml_documents(summary["manifest"]), values)


def uninstall(cluster: Cluster, release: str, namespace: str) -> None:
    with helm(cluster, namespace) as config:
        config.uninstall(release, wait="watcher", timeout=HELM_TIMEOUT_SECONDS, ignore_not_found=True)


@contextlib.contextmanager
def installed(cluster: Cluster, chart: helm_python.Chart, values: dict, prefix: str) -> Iterator[Installed]:
    """The chart installed into a fresh namespace; uninstalled (and the
    namespace deleted) afterwards, also when the install failed half-way."""
    release, namespace = unique(prefix), unique(f"chart-{prefix}")
    try:
        yield install(cluster, chart, values, release, namespace)
    finally:
        uninstall(cluster, release, namespace)
        cluster.admin.delete(f"/api/v1/namespaces/{namespace}")


def api_path(api_version: str, resource: str, namespace: str | None = None, name: str | None = None) -> str:
    prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    path = prefix + (f"/namespaces/{namespace}" if namespace else "") + f"/{resource}"
    return path + (f"/{name}" if name else "")


PLURALS = {
    "ClusterRole": "clusterroles", "ClusterRoleBinding": "clusterrolebindings", "ConfigMap": "configmaps",
    "Deployment": "deployments", "NetworkPolicy": "networkpolicies", "PodDisruptionBudget": "poddisruptionbudgets",
    "Role": "roles", "RoleBinding": "rolebindings", "Service": "services", "ServiceAccount": "serviceaccounts",
    "CompositeController": "compositecontrollers", "Secret": "secrets", "APIService": "apiservices",
    "Lease": "leases", "CustomResourceDefinition": "customresourcedefinitions",
}
CLUSTER_SCOPED = {"ClusterRole", "ClusterRoleBinding", "CompositeController", "APIService", "CustomResourceDefinition",
                  "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}


def object_path(obj: dict, namespace: str) -> str:
    kind = obj["kind"]
    scope = None if kind in CLUSTER_SCOPED else obj["metadata"].get("namespace", namespace)
    return api_path(obj["apiVersion"], PLURALS[kind], scope, obj["metadata"]["name"])


# --------------------------------------------------------------------------
# The release's pods, as the kubelet runs them


def is_ready(pod: dict) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in pod.get("status", {}).get("conditions", []))


def release_pods(admin: Kube, installed: Installed) -> list[dict]:
    """The release's pods that are not being deleted."""
    pods = admin.items(api_path("v1", "pods", installed.namespace), labelSelector=installed.selector)
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")]


def wait_ready_pods(cluster: Cluster, installed: Installed, count: int, *, not_named: set[str] = frozenset(),
                    what: str = "") -> list[dict]:
    """Exactly `count` pods of the release, none of them named in
    `not_named`, every one Ready, and nothing else (a terminating pod
    gone too)."""

    def check() -> list[dict] | None:
        every = cluster.admin.items(api_path("v1", "pods", installed.namespace), labelSelector=installed.selector)
        ready = [p for p in every if is_ready(p) and p["metadata"]["name"] not in not_named
                 and not p["metadata"].get("deletionTimestamp")]
        return ready if len(ready) == count == len(every) else None

    wait = waiter(cluster, installed.namespace, installed.selector)
    return wait(what or f"{count} Ready pod(s) of {installed.release}, and no other", check)


def lease_holder(admin: Kube, installed: Installed) -> str | None:
    [env] = [installed.one("Deployment")["spec"]["template"]["spec"]["containers"][0]["env"]]
    [name] = [e["value"] for e in env if e["name"] == "METAHOOK_LEADER_ELECTION_LEASE"]
    lease = admin.get(f"/apis/coordination.k8s.io/v1/namespaces/{installed.namespace}/leases/{name}")
    return (lease or {}).get("spec", {}).get("holderIdentity")


def pod_log(cluster: Cluster, namespace: str, name: str) -> str:
    return kubectl(cluster, "logs", "-n", namespace, name, "--all-containers", check=False).stdout


def check_started_by_the_kubelet(cluster: Cluster, pod: dict, image: str | None = None) -> dict:
    """The pod ran on the node: scheduled there, a containerd container of
    metahook's image (or `image`), running, ready, an address on the node's
    bridge."""
    name = pod["metadata"]["name"]
    assert pod["spec"].get("nodeName") == NODE_NAME, f"{name} is not on {NODE_NAME}: {pod['spec'].get('nodeName')}"
    [status] = pod["status"]["containerStatuses"]
    assert status["containerID"].startswith("containerd://"), status
    image = image or cluster.image
    assert status["image"].endswith(split_image(image)[1]), (status["image"], image)
    assert "running" in status["state"] and status["ready"] is True, status
    assert re.fullmatch(r"10\.244\.0\.\d+", pod["status"].get("podIP", "")), pod["status"].get("podIP")
    return status


# --------------------------------------------------------------------------
# The security context, from the running container's process


def container_pid(cluster: Cluster, container_id: str) -> int:
    """The host PID of a container's init process, from the node's
    containerd (ctr tasks ls)."""
    cid = container_id.removeprefix("containerd://")
    for line in cluster.ctr("tasks", "ls").splitlines()[1:]:
        fields = line.split()
        if fields and fields[0] == cid:
            assert fields[2] == "RUNNING", line
            return int(fields[1])
    raise AssertionError(f"container {cid} is not among containerd's tasks:\n{cluster.ctr('tasks', 'ls')}")


def process_security(pid: int) -> dict[str, Any]:
    """What the kernel says about a process: its uids, gids, groups,
    effective capabilities, no_new_privs, seccomp mode, and whether its root
    filesystem is mounted read-only (its own mount namespace's view)."""
    status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    root_options = None
    for line in Path(f"/proc/{pid}/mountinfo").read_text().splitlines():
        fields = line.split()
        # id parent major:minor root mountpoint options ...; the last "/" wins (stacked mounts).
        if fields[4] == "/":
            root_options = fields[5].split(",")
    return {
        "uids": status["Uid"].split(),
        "gids": status["Gid"].split(),
        "groups": status["Groups"].split(),
        "cap_eff": int(status["CapEff"].strip(), 16),
        "cap_prm": int(status["CapPrm"].strip(), 16),
        "no_new_privs": status["NoNewPrivs"].strip(),
        "seccomp": status["Seccomp"].strip(),
        "root_options": root_options,
        "cmdline": Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0"),
    }


def check_security_context(cluster: Cluster, pod: dict, binary: str = "/usr/local/bin/metahook") -> dict[str, Any]:
    """The chart's securityContext as the running process has it: uid and
    gid 65532 (and the fsGroup among its groups), no capabilities, no
    privilege escalation (no_new_privs), seccomp filtering (RuntimeDefault),
    a read-only root filesystem; and it is metahook's binary (or `binary`)."""
    [status] = pod["status"]["containerStatuses"]
    pid = container_pid(cluster, status["containerID"])
    seen = process_security(pid)
    name = pod["metadata"]["name"]
    uid = str(CHART_UID)
    assert seen["uids"] == [uid] * 4, f"{name}: Uid {seen['uids']}"
    assert seen["gids"] == [uid] * 4, f"{name}: Gid {seen['gids']}"
    assert uid in seen["groups"], f"{name}: fsGroup {uid} not among the groups {seen['groups']}"
    assert seen["cap_eff"] == 0 and seen["cap_prm"] == 0, f"{name}: capabilities {seen}"
    assert seen["no_new_privs"] == "1", f"{name}: NoNewPrivs {seen['no_new_privs']}"
    assert seen["seccomp"] == "2", f"{name}: Seccomp mode {seen['seccomp']} (2 is filtering)"
    assert seen["root_options"] and "ro" in seen["root_options"], f"{name}: / mounted {seen['root_options']}"
    assert seen["cmdline"][0] == binary.encode() and seen["cmdline"][1] == b"serve", seen["cmdline"]
    return seen


# --------------------------------------------------------------------------
# Refusals: in a log, in the audit log

# A refusal in a log: the API server's 403 / Forbidden, however it is
# worded. The number stands alone (not part of a digit run, a decimal
# fraction such as a timestamp's ".403", or a name such as "x-zundoko-403").
REFUSAL = re.compile(r"forbidden|(?<![\w.-])403(?![\w.-])", re.IGNORECASE)
# The one 403 that is no RBAC matter: the NamespaceLifecycle admission
# plugin refuses anything new in a namespace being deleted (an earlier
# test's, whose objects the driver's cluster-wide watches still see).
TERMINATING = "because it is being terminated"
# Nor is this one: right after the CRDs are created (the first `helm
# install` on a fresh cluster), kube-apiserver's OwnerReferencesPermission-
# Enforcement admission plugin does not know their kinds yet (its RESTMapper
# is refreshed every 30 s or so) and refuses a child whose owner reference
# sets blockOwnerDeletion: "cannot set blockOwnerDeletion in this case
# because cannot find RESTMapping for APIVersion fraim.co.jp/v1 Kind
# Hello". The driver retries (the reconcile shows Failed meanwhile) and
# converges once the API server has caught up; Metacontroller would meet
# the same.
STALE_MAPPING = "cannot find RESTMapping"


def refusals(log: str) -> list[str]:
    return [line for line in log.splitlines()
            if REFUSAL.search(line) and TERMINATING not in line and STALE_MAPPING not in line]


def rbac_refusal(record: dict) -> bool:
    status = record.get("responseStatus", {})
    causes = status.get("details", {}).get("causes", [])
    return (status.get("code") == 403 and not any(c.get("reason") == "NamespaceTerminating" for c in causes)
            and STALE_MAPPING not in status.get("message", ""))


def audit_records(path: Path, offset: int, username: str, agent: str | None = "metahook/") -> list[dict]:
    """The API server's audit records (tests/cluster: Metadata level, every
    request) of `username`, written after `offset`; by default only
    metahook's own (User-Agent metahook/<version>), not the tests' requests
    with the same ServiceAccount's token."""
    records = []
    quoted = json.dumps(username)
    with path.open("rb") as f:
        f.seek(offset)
        for line in f:
            if quoted.encode() not in line:
                continue
            record = json.loads(line)
            if record.get("user", {}).get("username") == username and (
                    agent is None or record.get("userAgent", "").startswith(agent)):
                records.append(record)
    return records


def describe(record: dict) -> str:
    ref = record.get("objectRef", {})
    resource = ref.get("resource", "") + (f"/{ref['subresource']}" if ref.get("subresource") else "")
    return (f"{record['verb']} {ref.get('apiGroup') or 'core'} {resource} {ref.get('namespace', '')}/"
            f"{ref.get('name', '')} -> {record.get('responseStatus', {}).get('code')}")


def service_account_name(installed: Installed) -> str:
    ns = installed.namespace
    return f"system:serviceaccount:{ns}:{installed.one('ServiceAccount')['metadata']['name']}"


# --------------------------------------------------------------------------
# The controllers, converging


def delete_work_namespace(admin: Kube, work: str) -> None:
    """Deletes `work`; a Hello left by a failure keeps its finalizer, which no
    controller removes any more, so it is taken off first."""
    for hello in admin.items(api_path("fraim.co.jp/v1", "helloes", work)):
        admin.call("PATCH", api_path("fraim.co.jp/v1", "helloes", work, hello["metadata"]["name"]),
                   {"metadata": {"finalizers": None}}, content_type="application/merge-patch+json")
    admin.delete(f"/api/v1/namespaces/{work}")


@contextlib.contextmanager
def work_then_release(cluster: Cluster, release: str, namespace: str) -> Iterator[str]:
    """A namespace for the work (its name yielded), torn down before the
    release: the drivers must still run to finalize what the work left."""
    work = unique(f"{release}-work")
    cluster.admin.create("/api/v1/namespaces", {"metadata": {"name": work}})
    try:
        yield work
    finally:
        delete_work_namespace(cluster.admin, work)
        uninstall(cluster, release, namespace)
        cluster.admin.delete(f"/api/v1/namespaces/{namespace}")


def controlled_by(obj: dict, uid: str) -> bool:
    return any(r["uid"] == uid and r.get("controller") for r in obj["metadata"].get("ownerReferences", []))


def deployment_ready(admin: Kube, namespace: str, name: str, replicas: int) -> dict | None:
    d = admin.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}")
    if d is None:
        return None
    status = d.get("status", {})
    done = (status.get("observedGeneration") == d["metadata"]["generation"]
            and status.get("readyReplicas") == replicas and status.get("updatedReplicas") == replicas)
    return d if done else None


def http_get_in_node(url: str) -> str:
    """GET `url` from inside the node's network namespace (where the pods'
    addresses are routed)."""
    code = ("import sys, urllib.request\n"
            "print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode(errors='replace'))")
    done = subprocess.run(["ip", "netns", "exec", NODE_NETNS, sys.executable, "-c", code, url],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, f"GET {url} in the node: {done.stderr}"
    return done.stdout


def https_in_node(url: str, server_name: str, ca_pem: str, body: bytes | None = None,
                  client: tuple[str, str] | None = None) -> tuple[int, str]:
    """A request over HTTPS from inside the node's network namespace: the
    server verified against `ca_pem` under `server_name`, with `client`
    (certificate PEM, key PEM) presented if given. (status, body); status 0
    and the error when the TLS handshake itself fails."""
    code = """
import http.client, json, socket, ssl, sys, urllib.parse
url, name, ca, crt, key, body = json.loads(sys.stdin.read())
ctx = ssl.create_default_context(cadata=ca)
if crt:
    ctx.load_cert_chain(crt, key)
u = urllib.parse.urlsplit(url)
conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
try:
    # Verified under the Service's name, as Metacontroller dials it.
    conn.sock = ctx.wrap_socket(socket.create_connection((u.hostname, u.port), 10), server_hostname=name)
    conn.request("POST" if body is not None else "GET", u.path, body=body,
                 headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    print(json.dumps([r.status, r.read().decode(errors="replace")]))
except (ssl.SSLError, ConnectionError) as e:
    print(json.dumps([0, repr(e)]))
"""
    with tempfile.TemporaryDirectory() as tmp:
        crt = key = None
        if client:
            crt, key = f"{tmp}/tls.crt", f"{tmp}/tls.key"
            Path(crt).write_text(client[0])
            Path(key).write_text(client[1])
        done = subprocess.run(["ip", "netns", "exec", NODE_NETNS, sys.executable, "-c", code],
                              input=json.dumps([url, server_name, ca_pem, crt, key,
                                                body.decode() if body is not None else None]),
                              capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, f"{url} in the node: {done.stderr}"
    status, text = json.loads(done.stdout)
    return status, text


def create_hello(admin: Kube, ns: str, name: str, replicas: int, labels: dict | None = None) -> dict:
    metadata: dict = {"name": name}
    if labels:
        metadata["labels"] = labels
    return admin.create(api_path("fraim.co.jp/v1", "helloes", ns), {
        "apiVersion": "fraim.co.jp/v1", "kind": "Hello", "metadata": metadata,
        "spec": {"replicas": replicas, "image": HELLO_IMAGE}})


def hello_converged(admin: Kube, ns: str, name: str, replicas: int, wait: Callable[..., Any]) -> dict:
    """The Hello's Deployment (controlled by it, running the Hello's image),
    its pods run by the kubelet and Ready, answering HTTP, and the Hello's
    status caught up with them: readyReplicas from the real kubelet."""
    hello = admin.ok("GET", api_path("fraim.co.jp/v1", "helloes", ns, name))
    uid = hello["metadata"]["uid"]
    deployment_path = api_path("apps/v1", "deployments", ns, name)
    deployment = wait(f"the Hello {name}'s Deployment", lambda: admin.get(deployment_path))
    assert controlled_by(deployment, uid), deployment["metadata"].get("ownerReferences")
    assert deployment["spec"]["replicas"] == replicas
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == HELLO_IMAGE

    def caught_up() -> dict | None:
        h = admin.ok("GET", api_path("fraim.co.jp/v1", "helloes", ns, name))
        status = h.get("status", {})
        ok = (status.get("observedGeneration") == h["metadata"]["generation"]
              and status.get("readyReplicas") == replicas)
        return h if ok else None

    caught = wait(f"the Hello {name}'s status: readyReplicas {replicas} at its generation", caught_up)
    assert HELLO_FINALIZER in caught["metadata"].get("finalizers", [])
    selector = ",".join(f"{k}={v}" for k, v in deployment["spec"]["selector"]["matchLabels"].items())
    pods = [p for p in admin.items(api_path("v1", "pods", ns), labelSelector=selector)
            if is_ready(p) and not p["metadata"].get("deletionTimestamp")]
    assert len(pods) >= replicas, [p["metadata"]["name"] for p in pods]
    for pod in pods[:replicas]:
        [status] = pod["status"]["containerStatuses"]
        assert status["containerID"].startswith("containerd://") and "running" in status["state"], status
        assert pod["spec"]["nodeName"] == NODE_NAME
    # The server in the Hello's image answers on its pod's address.
    answer = http_get_in_node(f"http://{pods[0]['status']['podIP']}:80/")
    assert answer.strip(), f"{pods[0]['metadata']['name']} answered nothing"
    return caught


def drive_hello(admin: Kube, ns: str, wait: Callable[..., Any]) -> None:
    """A Deployment whose pods run, a status that caught up with the
    kubelet, Events; an orphan adopted and deleted; then deletion runs
    finalize: the Deployment goes, the finalizer goes, the Hello goes."""
    hello = create_hello(admin, ns, "hello", 2)
    uid = hello["metadata"]["uid"]
    hello_converged(admin, ns, "hello", 2, wait)

    # An orphan matching the Hello's selector is adopted (an owner reference
    # patched in, blockOwnerDeletion and all) and, as the hook does not
    # desire it, deleted.
    admin.create(api_path("apps/v1", "deployments", ns), {
        "metadata": {"name": "stray", "labels": {"controller-uid": uid}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "stray"}},
                 "template": {"metadata": {"labels": {"app": "stray"}},
                              "spec": {"containers": [{"name": "c", "image": HELLO_IMAGE}]}}}})
    wait("the adopted stray Deployment to be deleted",
         lambda: admin.get(api_path("apps/v1", "deployments", ns, "stray")) is None)
    events = api_path("events.k8s.io/v1", "events", ns)
    wait("an Event about the Hello",
         lambda: [e for e in admin.items(events) if e.get("regarding", {}).get("uid") == uid])

    hellos = api_path("fraim.co.jp/v1", "helloes", ns)
    admin.ok("DELETE", f"{hellos}/hello")
    wait("finalize to delete the Deployment", lambda: admin.get(api_path("apps/v1", "deployments", ns, "hello")) is None)
    wait("the finalizer to go, and the Hello with it", lambda: admin.get(f"{hellos}/hello") is None)


HIKAWA_GROUP = "zundokokiyoshi.kaitoy.github.com/v1beta1"
FOO_GROUP = "samplecontroller.k8s.io/v1alpha1"


def drive_hikawa(admin: Kube, ns: str, wait: Callable[..., Any], name: str = "hikawa") -> dict:
    """Zundokos until a Kiyoshi: the status says so, and there is exactly one."""
    hikawa = admin.create(api_path(HIKAWA_GROUP, "hikawas", ns), {
        "apiVersion": HIKAWA_GROUP, "kind": "Hikawa", "metadata": {"name": name}, "spec": {"intervalMillis": 10}})
    uid = hikawa["metadata"]["uid"]

    def kiyoshied() -> dict | None:
        status = admin.ok("GET", api_path(HIKAWA_GROUP, "hikawas", ns, name)).get("status", {})
        return status if status.get("kiyoshied") is True else None

    status = wait(f"the Hikawa {name} to say Kiyoshi!", kiyoshied)
    assert status["song"].endswith("Zun Zun Zun Zun Doko Kiyoshi!"), status
    kiyoshis = [k for k in admin.items(api_path(HIKAWA_GROUP, "kiyoshis", ns)) if controlled_by(k, uid)]
    assert len(kiyoshis) == 1, kiyoshis
    return kiyoshis[0]


def drive_foo(admin: Kube, ns: str, wait: Callable[..., Any], name: str = "example-foo",
              deployment_name: str = "foo-deployment") -> dict:
    """The Deployment spec.deploymentName names, controlled by the Foo, and
    a status at the Foo's generation counting what the kubelet made
    available. The Foo's hook always runs nginx:latest (the
    sample-controller's image), which no registry here can serve: its pods
    are created and the kubelet reports the pull failing, so the honest
    count is 0 available, with the Ready condition False."""
    foos = api_path(FOO_GROUP, "foos", ns)
    foo = admin.create(foos, {"apiVersion": FOO_GROUP, "kind": "Foo", "metadata": {"name": name},
                              "spec": {"deploymentName": deployment_name, "replicas": 2}})
    uid = foo["metadata"]["uid"]
    path = api_path("apps/v1", "deployments", ns, deployment_name)
    deployment = wait(f"the Foo {name}'s Deployment", lambda: admin.get(path))
    assert controlled_by(deployment, uid), deployment["metadata"].get("ownerReferences")
    assert deployment["spec"]["replicas"] == 2

    def pulling() -> list[str] | None:
        reasons = []
        for pod in admin.items(api_path("v1", "pods", ns), labelSelector=f"controller={name}"):
            for status in pod.get("status", {}).get("containerStatuses", []):
                reasons.append(status.get("state", {}).get("waiting", {}).get("reason"))
        return reasons if len(reasons) == 2 and set(reasons) <= {"ErrImagePull", "ImagePullBackOff"} else None

    wait(f"the kubelet to report the Foo {name}'s pods unable to pull nginx:latest", pulling)

    def counted() -> dict | None:
        f = admin.ok("GET", f"{foos}/{name}")
        status = f.get("status", {})
        ready = [c for c in status.get("conditions", []) if c["type"] == "Ready"]
        ok = (status.get("observedGeneration") == f["metadata"]["generation"]
              and status.get("availableReplicas") == 0 and ready and ready[0]["status"] == "False")
        return f if ok else None

    return wait(f"the Foo {name}'s status: availableReplicas 0, Ready False, at its generation", counted)
