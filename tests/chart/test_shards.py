"""Driver mode in shards, installed as users install it: `helm install` with
driver.shards (three shards of Hellos by the label metahook.dev/shard, two
replicas each: one leads, one stands by) onto the real node of
tests/cluster/, running metahook's image (see test_install.py for the
setup). What the stand-in e2e (tests/e2e/shards.rs) shows with processes,
here with the chart's Deployments, Leases and ServiceAccounts:

- each shard leads on its own Lease and runs as its own ServiceAccount;
- Hellos across the shards converge, and the API server's audit log shows
  every write to a Hello or its Deployment made by that Hello's shard, from
  that shard's pods;
- the leader of one shard killed, its standby takes that shard's Lease (the
  other shards' stay as they were) and a new Hello of that shard converges;
- a Hello relabelled to another shard converges there, and the old shard
  writes it no more;
- each shard's memory, printed.

Marked `cluster`; the tests run in order on one release (module fixture).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

import helm_python
import pytest

from chartcluster import (Cluster, Installed, api_path, audit_records, check_started_by_the_kubelet, cluster,  # noqa: F401
                          container_pid, controlled_by, create_hello, delete_work_namespace, describe, install,
                          is_ready, rbac_refusal, report, report_if_failed, uninstall, unique, waiter,
                          work_then_release)
from conftest import conversion_files
from kube import Kube

pytestmark = pytest.mark.cluster

LABEL = "metahook.dev/shard"
SHARDS = ["a", "b", "c"]
# A leader and a standby per shard: 6 pods of the chart's requests (50m CPU,
# 64Mi each) fit the node beside the Hellos' pods.
REPLICAS = 2
HELLOES = api_path("fraim.co.jp/v1", "helloes")
WRITES = {"create", "update", "patch", "delete", "deletecollection"}


class Sharded:
    """The sharded release and the work namespace its Hellos live in."""

    def __init__(self, cluster: Cluster, installed: Installed, work: str, audit_offset: int) -> None:
        self.cluster = cluster
        self.installed = installed
        self.work = work
        # From before the install: the pods' watches start before they lead.
        self.audit_offset = audit_offset
        self.deployments = {d["spec"]["selector"]["matchLabels"][LABEL]: d for d in installed.all("Deployment")}
        # Hello -> its shard, as the tests label and relabel them.
        self.home: dict[str, str] = {}
        assert sorted(self.deployments) == SHARDS, sorted(self.deployments)

    @property
    def admin(self) -> Kube:
        return self.cluster.admin

    @property
    def release_selector(self) -> str:
        return f"app.kubernetes.io/instance={self.installed.release}"

    def wait(self, what, check, deadline=None):
        return waiter(self.cluster, self.installed.namespace, self.release_selector,
                      also=lambda: report(self.cluster, self.work))(what, check, deadline)

    def pod_spec(self, shard: str) -> dict:
        return self.deployments[shard]["spec"]["template"]["spec"]

    def env(self, shard: str) -> dict[str, str]:
        return {e["name"]: e.get("value") for e in self.pod_spec(shard)["containers"][0]["env"]}

    def account(self, shard: str) -> str:
        return f"system:serviceaccount:{self.installed.namespace}:{self.pod_spec(shard)['serviceAccountName']}"

    def pods(self, shard: str) -> list[dict]:
        """The shard's pods that are not being deleted."""
        labels = self.deployments[shard]["spec"]["selector"]["matchLabels"]
        selector = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
        pods = self.admin.items(api_path("v1", "pods", self.installed.namespace), labelSelector=selector)
        return [p for p in pods if not p["metadata"].get("deletionTimestamp")]

    def holder(self, shard: str) -> str | None:
        lease = self.admin.get(api_path("coordination.k8s.io/v1", "leases", self.installed.namespace,
                                        self.env(shard)["METAHOOK_LEADER_ELECTION_LEASE"]))
        return (lease or {}).get("spec", {}).get("holderIdentity")

    def leader(self, shard: str, not_named: frozenset[str] = frozenset()) -> tuple[dict, dict]:
        """(leader, standby): both of the shard's pods running, the one
        holding its Lease Ready, the other not (a standby never is)."""

        def check() -> tuple[dict, dict] | None:
            pods = self.pods(shard)
            running = [p for p in pods if any("running" in s.get("state", {})
                                              for s in p.get("status", {}).get("containerStatuses", []))]
            ready = [p for p in running if is_ready(p)]
            if len(pods) != REPLICAS or len(running) != REPLICAS or len(ready) != 1:
                return None
            [leader] = ready
            name = leader["metadata"]["name"]
            if name in not_named or self.holder(shard) != name:
                return None
            [standby] = [p for p in running if p is not leader]
            return leader, standby

        return self.wait(f"shard {shard}: {REPLICAS} pods running, the Lease holder Ready and the other not", check)

    def writes(self, offset: int | None = None) -> list[dict]:
        """metahook's writes (User-Agent metahook/..., any identity) to Hellos
        and Deployments in the work namespace, from the audit log."""
        found = []
        needle = json.dumps(self.work).encode()
        with Path(self.cluster.audit_log).open("rb") as f:
            f.seek(self.audit_offset if offset is None else offset)
            for line in f:
                if needle not in line:
                    continue
                record = json.loads(line)
                ref = record.get("objectRef", {})
                if (record.get("stage") == "ResponseComplete" and record.get("verb") in WRITES
                        and record.get("userAgent", "").startswith("metahook/")
                        and ref.get("namespace") == self.work and ref.get("resource") in {"helloes", "deployments"}):
                    found.append(record)
        return found

    def create(self, name: str, shard: str, replicas: int = 1) -> None:
        create_hello(self.admin, self.work, name, replicas, labels={LABEL: shard})

    def converged(self, name: str, shard: str, replicas: int | None = None) -> dict:
        """The Hello's Deployment, controlled by it and carrying the shard's
        label (so applied by that shard), and the Hello's status at its
        generation (with `replicas`: that many Ready, from the kubelet)."""

        def check() -> dict | None:
            hello = self.admin.get(f"{api_path('fraim.co.jp/v1', 'helloes', self.work)}/{name}")
            deployment = self.admin.get(api_path("apps/v1", "deployments", self.work, name))
            if hello is None or deployment is None:
                return None
            status = hello.get("status") or {}
            ok = (controlled_by(deployment, hello["metadata"]["uid"])
                  and deployment["metadata"].get("labels", {}).get(LABEL) == shard
                  and status.get("observedGeneration") == hello["metadata"]["generation"])
            if replicas is not None:
                ok = ok and deployment["spec"]["replicas"] == replicas and status.get("readyReplicas") == replicas
            return hello if ok else None

        return self.wait(f"the Hello {name} converged by shard {shard}", check)


def audit_size(cluster: Cluster) -> int:
    return Path(cluster.audit_log).stat().st_size


def pod_of(record: dict) -> str:
    """The pod whose projected token made the request."""
    [name] = record["user"].get("extra", {}).get("authentication.kubernetes.io/pod-name", [""])
    return name


@pytest.fixture(scope="module")
def sharded(cluster: Cluster, chart: helm_python.Chart) -> Iterator[Sharded]:
    release, namespace = unique("shards"), unique("chart-shards")
    # The driver's debug log (each reconcile, its trigger and outcome): the
    # pods' logs are in a failure's report.
    values = {"mode": "driver", "replicas": REPLICAS,
              "driver": {"shards": [{"name": s, "selector": f"{LABEL} in ({s})"} for s in SHARDS]},
              "extraEnv": [{"name": "RUST_LOG", "value": "info,metahook_driver=debug"}]}
    with work_then_release(cluster, release, namespace) as work:
        offset = audit_size(cluster)
        # Helm cannot wait for a standby that is never Ready: the tests wait
        # for each shard's leader instead.
        yield Sharded(cluster, install(cluster, chart, values, release, namespace, wait="hookOnly"), work, offset)


@pytest.fixture(autouse=True)
def report_failures(request: pytest.FixtureRequest, sharded: Sharded) -> Iterator[None]:
    yield
    report_if_failed(request, sharded.cluster, (sharded.installed.namespace, sharded.release_selector),
                     (sharded.work, None))


def test_each_shard_leads_on_its_own_lease_as_its_own_account(sharded: Sharded) -> None:
    installed = sharded.installed
    kinds = sorted(o["kind"] for o in installed.objects)
    # A leader-election Role and its binding per shard: each account may
    # take its own Lease only.
    assert kinds == sorted(["ClusterRole", "ClusterRoleBinding", "ConfigMap", "NetworkPolicy", "Service"]
                           + ["Deployment", "Lease", "ServiceAccount", "Role", "RoleBinding"] * len(SHARDS)
                           + ["CustomResourceDefinition"] * len(conversion_files()))
    accounts = {sharded.account(s) for s in SHARDS}
    assert len(accounts) == len(SHARDS), accounts
    holders = set()
    for shard in SHARDS:
        leader, standby = sharded.leader(shard)
        check_started_by_the_kubelet(sharded.cluster, leader)
        for pod in (leader, standby):
            assert pod["spec"]["serviceAccountName"] == sharded.pod_spec(shard)["serviceAccountName"]
            assert pod["metadata"]["labels"][LABEL] == shard
        holders.add(sharded.holder(shard))
    assert len(holders) == len(SHARDS), f"one pod holds several shards' Leases: {holders}"


def test_hellos_converge_each_written_only_by_its_own_shard(sharded: Sharded) -> None:
    home = sharded.home
    home.update({"a1": "a", "a2": "a", "b1": "b", "c1": "c"})
    for name, shard in home.items():
        sharded.create(name, shard)
    for name, shard in home.items():
        sharded.converged(name, shard)
    writes = sharded.writes()
    wrong = [f"{describe(r)} by {r['user']['username']}" for r in writes
             if r["user"]["username"] != sharded.account(home[r["objectRef"]["name"]])]
    assert wrong == [], "written by another shard than the Hello's:\n" + "\n".join(wrong)
    # Not vacuous: every Hello, and its Deployment, was written by its shard,
    # from that shard's pods.
    for name, shard in home.items():
        mine = [r for r in writes if r["objectRef"]["name"] == name]
        assert {r["objectRef"]["resource"] for r in mine} == {"helloes", "deployments"}, [describe(r) for r in mine]
        deployment = sharded.deployments[shard]["metadata"]["name"]
        pods = {pod_of(r) for r in mine}
        assert pods and all(p.startswith(f"{deployment}-") for p in pods), (name, pods)
    # Nothing any shard asked for was refused (its Lease, watches, Events...).
    for shard in SHARDS:
        records = audit_records(sharded.cluster.audit_log, sharded.audit_offset, sharded.account(shard))
        denied = [describe(r) for r in records if rbac_refusal(r)]
        assert records and denied == [], f"shard {shard}'s requests refused:\n" + "\n".join(denied)


def test_a_killed_leader_is_replaced_by_its_standby(sharded: Sharded) -> None:
    """Shard b's leader pod deleted (as a drain or a rollout deletes it):
    another pod of shard b takes its Lease, the other shards' Leases stay
    with their holders, and a new Hello of shard b converges through the
    new leader.

    Which pod wins is still a race, if a short one: in driver mode the
    chart renders no preStop sleep, so the old leader gets SIGTERM at once,
    stops its driver and releases the Lease, and serves its delay after
    (--shutdown-delay-seconds); the standby is watching the Lease and
    tries as soon as it is released (driver/src/start/leader/), while the
    Deployment's replacement pod still has to be scheduled and started to
    try at all. tests/e2e/restart.rs shows the standby taking a released
    Lease within its term, and the old leader serving out its delay."""
    admin, ns = sharded.admin, sharded.installed.namespace
    others = {s: sharded.holder(s) for s in SHARDS if s != "b"}
    old, standby = sharded.leader("b")
    old_name, standby_name = old["metadata"]["name"], standby["metadata"]["name"]
    admin.ok("DELETE", api_path("v1", "pods", ns, old_name),
             {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 10})
    new, _ = sharded.leader("b", not_named=frozenset({old_name}))
    new_name = new["metadata"]["name"]
    taker = "the standby" if new_name == standby_name else "the replacement pod"
    print(f"\nshard b: Lease {old_name} -> {new_name}, {taker}")
    assert sharded.holder("b") == new_name != old_name
    assert {s: sharded.holder(s) for s in others} == others, "another shard's Lease moved"
    offset = audit_size(sharded.cluster)
    sharded.create("b2", "b")
    sharded.home["b2"] = "b"
    sharded.converged("b2", "b")
    mine = [r for r in sharded.writes(offset) if r["objectRef"]["name"] == "b2"]
    assert mine and {r["user"]["username"] for r in mine} == {sharded.account("b")}, [describe(r) for r in mine]
    assert {pod_of(r) for r in mine} == {new_name}, "b2 written by another pod than shard b's new leader"


def test_a_relabelled_hello_moves_to_its_new_shard(sharded: Sharded) -> None:
    """a2 relabelled from shard a to c: shard c applies its Deployment with
    c's label. From then on shard a writes it no more: not while c scales
    it, nor while its pods come up (each step a watch event either shard
    would reconcile on, were a2 still in its watch)."""
    admin, work = sharded.admin, sharded.work
    admin.ok("PATCH", f"{api_path('fraim.co.jp/v1', 'helloes', work)}/a2", {"metadata": {"labels": {LABEL: "c"}}},
             content_type="application/merge-patch+json")
    sharded.home["a2"] = "c"
    sharded.converged("a2", "c")
    offset = audit_size(sharded.cluster)
    admin.ok("PATCH", f"{api_path('fraim.co.jp/v1', 'helloes', work)}/a2", {"spec": {"replicas": 2}},
             content_type="application/merge-patch+json")
    # Settled: the Deployment's pods Ready and the Hello's status counting
    # them, after every status change of the Deployment on the way.
    sharded.converged("a2", "c", replicas=2)
    after = [r for r in sharded.writes(offset) if r["objectRef"]["name"] == "a2"]
    users = {r["user"]["username"] for r in after}
    assert sharded.account("a") not in users, "shard a wrote a2 after it moved:\n" + "\n".join(
        describe(r) for r in after if r["user"]["username"] == sharded.account("a"))
    assert users == {sharded.account("c")}, [f"{describe(r)} by {r['user']['username']}" for r in after]


def memory_kib(pid: int) -> tuple[int, int]:
    """(resident, peak resident) of a process, in KiB, from the kernel."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])


def test_memory_per_shard(sharded: Sharded) -> None:
    """Each shard's leader and standby, resident memory from /proc of the
    container's process (the binary exports no process_* metrics). Asserted
    only to be within the chart's memory limit."""
    limit_kib = None
    rows = []
    for shard in SHARDS:
        limit = sharded.pod_spec(shard)["containers"][0]["resources"]["limits"]["memory"]
        assert limit.endswith("Mi"), limit
        limit_kib = int(limit[:-2]) * 1024
        parents = len(sharded.admin.items(api_path("fraim.co.jp/v1", "helloes", sharded.work),
                                          labelSelector=f"{LABEL}={shard}"))
        leader, standby = sharded.leader(shard)
        row = [shard, str(parents)]
        for pod in (leader, standby):
            [status] = pod["status"]["containerStatuses"]
            rss, peak = memory_kib(container_pid(sharded.cluster, status["containerID"]))
            assert 0 < rss <= peak < limit_kib, (pod["metadata"]["name"], rss, peak, limit_kib)
            row.append(f"{rss / 1024:.1f} / {peak / 1024:.1f}")
        rows.append(row)
    print(f"\n| shard | Hellos | leader RSS / peak MiB | standby RSS / peak MiB |  (limit {limit_kib // 1024} MiB)")
    for row in rows:
        print("| " + " | ".join(row) + " |")
