"""From `metahook new` to `helm install`, as a user goes: a crate written
by `metahook new` into target/scaffolds/, its own test command
(scripts/test.sh: fmt, clippy, its snapshot and convergence tests, its
chart generated) passing with no edit, its image built the daemonless way
(its scripts/image.sh) and loaded into the node, its generated chart
installed in driver mode and next to the real Metacontroller (v4.17.2,
metacontroller_pod.py). In each mode one of its objects converges (the
ConfigMap holds the message, the status says Ready), is deleted, and goes
only once finalized; the release's ServiceAccount was refused nothing (the
API server's audit log) and its ClusterRole names no wildcard.

A second crate, asked for with other names (its kind by flag, another
group and version), is written beside it and must be the first with the
names swapped, file for file: what is built and installed once holds for
any names, and nothing is hard-wired to the first. (Building it too cost
CI minutes and showed nothing more.)

The crate builds in the repository's target/ (CARGO_TARGET_DIR) with the
checkout's Cargo.lock and the workspace's profiles, so it reuses the
dependencies the workspace and examples/widget built. Its image is built
with IMAGE_PROFILE=dev, the debug build its scripts/test.sh made: the
release build (thin LTO) cost CI 4 minutes on two cores and tests nothing
more here; metahook's own image, which the chart tests run, is the release
build.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import re
import shutil
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import helm_python
import pytest

from chartcluster import (Cluster, Installed, api_path, audit_records, check_security_context,  # noqa: F401
                          check_started_by_the_kubelet, cluster, describe, install, rbac_refusal, report,
                          service_account_name, split_image, uninstall, unique, wait_ready_pods, waiter)
from conftest import ROOT, load_yaml_documents
from metacontroller_pod import METACONTROLLER_NS, metacontroller  # noqa: F401

pytestmark = pytest.mark.cluster

SCAFFOLDS_DIR = ROOT / "target" / "scaffolds"
# Building a crate from cold on two busy cores.
BUILD_TIMEOUT_SECONDS = 3600
# The profile its image is built with (scripts/image.sh's IMAGE_PROFILE),
# and where cargo writes that build.
IMAGE_PROFILE, IMAGE_PROFILE_DIR = "dev", "debug"


@dataclass(frozen=True)
class Spec:
    """What a user asks `metahook new` for."""
    name: str
    kind: str
    group: str
    version: str
    # Left to `new`'s default (from the name) when None.
    kind_flag: bool

    @property
    def plural(self) -> str:
        return self.kind.lower() + "s"

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"


SPECS = [
    # A 40-character name: what is built and installed holds for a long one
    # (the chart's names truncated, the finalizer's within its 63).
    Spec("greenhouse-irrigation-schedules-operator", "IrrigationSchedule", "garden.example.org", "v1beta1",
         kind_flag=True),
    Spec("lamp-keeper", "Lamp", "lights.acme.io", "v2", kind_flag=True),
]
# Crates that only have to pass their own fmt and clippy unedited: a
# one-letter name, the kind from the directory's name (as `metahook new
# gadget-operator` gives it), a kind whose name the directory's would not
# give, and another long name.
LINTED = [
    Spec("a", "A", "example.com", "v1", kind_flag=False),
    Spec("gadget-operator", "Gadget", "tools.example.com", "v1alpha1", kind_flag=False),
    Spec("staticsite-operator", "StaticSite", "web.example.com", "v1", kind_flag=True),
    Spec("a-controller-with-a-forty-character-name", "AControllerWithAFortyCharacterName", "example.com",
         "v1", kind_flag=False),
]


@dataclass
class Built:
    spec: Spec
    dir: Path
    image: str
    chart: helm_python.Chart

    @property
    def binary(self) -> str:
        return f"/usr/local/bin/{self.spec.name}"

    def image_values(self) -> dict:
        repository, tag = split_image(self.image)
        return {"image": {"repository": repository, "tag": tag, "pullPolicy": "Never"}}


def user_command(args: list[str], cwd: Path, timeout: int = BUILD_TIMEOUT_SECONDS,
                 env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """A user's command (with `env` added to this one's), as it ended."""
    env = dict(os.environ, CARGO_TARGET_DIR=str(ROOT / "target"), **(env or {}))
    # The crate's own insta settings, not this run's.
    env.pop("INSTA_UPDATE", None)
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def run(args: list[str], cwd: Path, what: str, timeout: int = BUILD_TIMEOUT_SECONDS,
        env: dict[str, str] | None = None) -> str:
    """Runs a user's command; a failure shows the end of what it said."""
    done = user_command(args, cwd, timeout, env)
    assert done.returncode == 0, (f"{what}: `{' '.join(args)}` exited {done.returncode}\n"
                                  f"{done.stdout[-4000:]}\n{done.stderr[-6000:]}")
    return done.stdout


def metahook_binary() -> Path:
    """The metahook tests/e2e/run.sh built (METAHOOK_E2E_METAHOOK)."""
    binary = Path(os.environ.get("METAHOOK_E2E_METAHOOK") or ROOT / "target" / "debug" / "metahook")
    assert binary.is_file(), f"no {binary}: cargo build --bin metahook builds it"
    return binary


def scaffold(spec: Spec, into: Path = SCAFFOLDS_DIR) -> Path:
    """`metahook new` into a fresh directory, and what it wrote checked for
    the names asked for and no other."""
    into.mkdir(parents=True, exist_ok=True)
    crate = into / spec.name
    # The crate is written anew each run; its target/ is the repository's.
    shutil.rmtree(crate, ignore_errors=True)
    args = [str(metahook_binary()), "new", str(crate), "--group", spec.group, "--version", spec.version]
    if spec.kind_flag:
        args += ["--kind", spec.kind]
    run(args, into, "metahook new", timeout=120)
    others = [s for s in SPECS if s != spec]
    for path in crate.rglob("*"):
        if path.is_file():
            text = path.read_text()
            relative = path.relative_to(crate)
            assert "@@" not in text and "@@" not in str(relative), f"{relative} kept a marker"
            for other in others:
                for word in (other.kind, other.name, other.group, "widget", "Widget"):
                    assert word not in text, f"{relative} names {word!r}, not asked for"
    lib = (crate / "src" / "lib.rs").read_text()
    assert f'group = "{spec.group}"' in lib and f'kind = "{spec.kind}"' in lib, lib[:2000]
    assert f'name = "{spec.name}"' in (crate / "Cargo.toml").read_text()
    return crate


@pytest.fixture(scope="module")
def built(cluster: Cluster) -> Iterator[Built]:
    spec = SPECS[0]
    crate = scaffold(spec)
    # The crate's own test command, unedited: it also writes chart/.
    out = run([str(crate / "scripts" / "test.sh")], crate, f"{spec.name}: scripts/test.sh")
    assert "chart/: generated from the declaration" in out, out[-2000:]
    # Its image, the daemonless way, then into the node's containerd.
    image = run([str(crate / "scripts" / "image.sh")], crate, f"{spec.name}: scripts/image.sh",
                env={"IMAGE_PROFILE": IMAGE_PROFILE}).split()[-1]
    assert image.startswith(f"localhost/{spec.name}:"), image
    archive = crate / "target" / "images" / f"{spec.name}.tar"
    run([str(ROOT / "tests" / "cluster" / "load-image.sh"), str(cluster.dir), str(archive)], ROOT,
        "loading the image into the node", timeout=600)
    with helm_python.Chart.load(crate / "chart") as chart:
        yield Built(spec, crate, image, chart)


def names(spec: Spec) -> list[str]:
    """Every form `new` writes a spec's names in (WIDGET in
    metahook/src/scaffold/files.rs): the version only beside the group or
    as the declaration's `version`, as Metacontroller's own v1alpha1 is
    not the kind's."""
    return [spec.name, spec.name.replace("-", "_"), spec.api_version, f'version = "{spec.version}"',
            spec.group, spec.plural, spec.kind, spec.kind.lower()]


def swapped(text: str, first: Spec, second: Spec) -> str:
    """`text` with each of the first spec's names made the second's, the
    longer names first (the crate's name holds the kind's)."""
    swap = dict(zip(names(first), names(second)))
    pattern = re.compile("|".join(re.escape(n) for n in sorted(swap, key=len, reverse=True)))
    return pattern.sub(lambda m: swap[m.group(0)], text)


def written(crate: Path) -> set[Path]:
    """What `new` wrote, relative to the crate (it writes no target/)."""
    return {p.relative_to(crate) for p in crate.rglob("*") if p.is_file()}


def comparable(path: Path, text: str) -> str | list[str]:
    """A file's text, or Cargo.lock's packages as a set: the lock is sorted
    by name, so the crate's own entry moves with its name. Rust without its
    layout: `new` runs rustfmt, which wraps a line a longer name made too
    long (adding a trailing comma to a list it breaks)."""
    if path.name == "Cargo.lock":
        return sorted(json.dumps(p, sort_keys=True) for p in tomllib.loads(text)["package"])
    if path.suffix == ".rs":
        return re.sub(r",([)\]}])", r"\1", re.sub(r"\s+", "", text))
    return text


def test_a_crate_with_other_names_is_the_first_with_the_names_swapped() -> None:
    first, second = SPECS
    # Apart from the crate the other tests build.
    a, b = scaffold(first, SCAFFOLDS_DIR / "compared"), scaffold(second, SCAFFOLDS_DIR / "compared")
    a_files, b_files = written(a), written(b)
    assert {Path(swapped(str(p), first, second)) for p in a_files} == b_files, (sorted(a_files), sorted(b_files))
    for path in sorted(a_files):
        other = Path(swapped(str(path), first, second))
        assert (comparable(path, swapped((a / path).read_text(), first, second))
                == comparable(other, (b / other).read_text())), f"{path} and {other}"
        assert os.access(a / path, os.X_OK) == os.access(b / other, os.X_OK), f"{path}: its mode"


@dataclass
class Release:
    installed: Installed
    work: str
    audit_offset: int


@contextlib.contextmanager
def released(cluster: Cluster, built: Built, mode: str) -> Iterator[Release]:
    """The crate's chart installed in `mode`; a work namespace for its
    objects; both gone afterwards (the work first, while the controller
    still runs its finalizer)."""
    release, namespace, work = unique(built.spec.name[:20]), unique(f"scaffold-{mode}"), unique("scaffold-work")
    cluster.admin.create("/api/v1/namespaces", {"metadata": {"name": work}})
    offset = cluster.audit_log.stat().st_size
    try:
        installed = install(cluster, built.chart, {"mode": mode, **built.image_values()}, release, namespace)
        yield Release(installed, work, offset)
    finally:
        strip_finalizers(cluster, built, work)
        cluster.admin.delete(f"/api/v1/namespaces/{work}")
        uninstall(cluster, release, namespace)
        cluster.admin.delete(f"/api/v1/namespaces/{namespace}")


def strip_finalizers(cluster: Cluster, built: Built, work: str) -> None:
    """An object a failed test left keeps its finalizer, which no controller
    removes once the release is gone: taken off, so the namespace goes."""
    spec = built.spec
    for obj in cluster.admin.items(api_path(spec.api_version, spec.plural, work)):
        cluster.admin.call("PATCH", api_path(spec.api_version, spec.plural, work, obj["metadata"]["name"]),
                           {"metadata": {"finalizers": None}}, content_type="application/merge-patch+json")


def converge_delete_finalize(cluster: Cluster, built: Built, release: Release,
                             then: Callable[[str], None] = lambda path: None) -> str:
    """One object: converged (its ConfigMap holds the message three times,
    its status says so and Ready), `then` called with its path, then
    deleted: held by the controller's finalizer until its finalize hook
    lets it go, its ConfigMap gone too. Returns when it was seen converged
    (the audit log's time format)."""
    spec, admin, work = built.spec, cluster.admin, release.work
    wait = waiter(cluster, release.installed.namespace, release.installed.selector,
                  also=lambda: report(cluster, work) + report(cluster, METACONTROLLER_NS))
    path = api_path(spec.api_version, spec.plural, work, "greeting")
    admin.create(api_path(spec.api_version, spec.plural, work),
                 {"apiVersion": spec.api_version, "kind": spec.kind, "metadata": {"name": "greeting"},
                  "spec": {"message": "hi", "copies": 3}})
    config_map = api_path("v1", "configmaps", work, "greeting")
    wait("the ConfigMap to hold the message",
         lambda: ((admin.get(config_map) or {}).get("data") or {}).get("text") == "hi hi hi")

    def ready() -> dict | None:
        obj = admin.get(path) or {}
        status = obj.get("status") or {}
        conditions = {c["type"]: c["status"] for c in status.get("conditions", [])}
        return obj if status.get("written") == "hi hi hi" and conditions.get("Ready") == "True" else None

    obj = wait(f"the {spec.kind}'s status: written and Ready", ready)
    converged = audit_now()
    owners = (admin.get(config_map) or {})["metadata"].get("ownerReferences", [])
    assert [o["uid"] for o in owners if o.get("controller")] == [obj["metadata"]["uid"]], owners
    # Metacontroller's finalizer, which the driver uses too.
    finalizer = f"metacontroller.io/compositecontroller-{spec.kind.lower()}"
    assert finalizer in obj["metadata"].get("finalizers", []), obj["metadata"]
    then(path)
    admin.delete(path)
    wait(f"the {spec.kind} to be finalized and gone", lambda: admin.get(path) is None)
    wait("its ConfigMap to be gone", lambda: admin.get(config_map) is None)
    return converged


def no_refusal_and_no_wildcard(cluster: Cluster, release: Release) -> int:
    """Nothing the release's ServiceAccount asked for was refused (every
    request of it in the audit log, whatever its client), and no rule of
    its roles has a wildcard. Returns how many requests it made."""
    installed = release.installed
    account = installed.one("ServiceAccount")["metadata"]["name"]
    username = f"system:serviceaccount:{installed.namespace}:{account}"
    records = audit_records(cluster.audit_log, release.audit_offset, username, agent=None)
    refused = [describe(r) for r in records if rbac_refusal(r)]
    assert refused == [], f"{username} was refused:\n" + "\n".join(refused[:20])
    for kind in ("ClusterRole", "Role"):
        for role in installed.all(kind):
            assert "*" not in json.dumps(role["rules"]), f"{kind} {role['metadata']['name']}: {role['rules']}"
    return len(records)


def test_driver_mode(cluster: Cluster, built: Built) -> None:
    """Without Metacontroller: the crate's binary drives, with the
    ClusterRole its chart derived from its declaration."""
    with released(cluster, built, "driver") as release:
        [pod] = wait_ready_pods(cluster, release.installed, 1)
        check_started_by_the_kubelet(cluster, pod, built.image)
        check_security_context(cluster, pod, built.binary)
        role = release.installed.one("ClusterRole")
        resources = {r for rule in role["rules"] for r in rule["resources"]}
        assert {built.spec.plural, f"{built.spec.plural}/status", "configmaps"} <= resources, role["rules"]
        # `manifests --driver` gives the same rules without Helm.
        binary = ROOT / "target" / IMAGE_PROFILE_DIR / built.spec.name
        plain = load_yaml_documents(run([str(binary), "manifests", "--driver"], built.dir, "manifests", timeout=60))
        [plain_role] = [d for d in plain if d["kind"] == "ClusterRole"]
        assert plain_role["rules"] == role["rules"], (plain_role["rules"], role["rules"])
        driver = Driver(cluster, built, release, pod)
        converged = converge_delete_finalize(cluster, built, release, then=driver.touch_then_restart)
        requests = no_refusal_and_no_wildcard(cluster, release)
        assert requests > 0, "the audit log shows no request of the driver's ServiceAccount: it was not read"
        driver.wrote_nothing_after(converged)


def test_metacontroller_mode(cluster: Cluster, built: Built, metacontroller: dict) -> None:
    """Next to the real Metacontroller: it calls the crate's hooks through
    the CompositeController the chart rendered, at the release's Service."""
    with released(cluster, built, "metacontroller") as release:
        pods = wait_ready_pods(cluster, release.installed, 2)
        for pod in pods:
            check_started_by_the_kubelet(cluster, pod, built.image)
            check_security_context(cluster, pod, built.binary)
        [cc] = release.installed.all("CompositeController")
        service = release.installed.one("Service")["metadata"]["name"]
        for hook in ("sync", "finalize"):
            webhook = cc["spec"]["hooks"][hook]["webhook"]
            assert webhook["service"]["name"] == service, webhook
            assert webhook["path"] == f"/{built.spec.kind.lower()}/{hook}", webhook
        converge_delete_finalize(cluster, built, release)
        no_refusal_and_no_wildcard(cluster, release)


# What a driver that writes nothing when nothing changed is allowed: reads
# and watches.
WRITES = {"create", "update", "patch", "delete", "deletecollection"}


def audit_now() -> str:
    """Now, as the audit log writes its times (RFC 3339, microseconds, UTC):
    comparable as text."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Driver:
    """The release's driver in driver mode, as the audit log and its
    /metrics (through the API server's proxy to its pod) see it."""

    def __init__(self, cluster: Cluster, built: Built, release: Release, pod: dict) -> None:
        self.cluster, self.built, self.release, self.pod = cluster, built, release, pod
        # When the object was deleted (touch_then_restart's end).
        self.deleted_after = ""

    def reconciles(self) -> int:
        """metahook_driver_reconciles_total of its pod, every result."""
        name, ns = self.pod["metadata"]["name"], self.release.installed.namespace
        text = self.cluster.admin.call("GET", f"/api/v1/namespaces/{ns}/pods/{name}:8080/proxy/metrics").body
        assert isinstance(text, str) and "metahook_driver_" in text, f"{name}'s /metrics: {text!r:.300}"
        return sum(int(float(line.rsplit(" ", 1)[1])) for line in text.splitlines()
                   if line.startswith("metahook_driver_reconciles_total{"))

    def touch_then_restart(self, path: str) -> None:
        """A change that asks for nothing (an annotation and a label) once
        the driver is quiet, reconciled; then the driver's pod deleted and
        its successor's first reconcile awaited."""
        wait = waiter(self.cluster, self.release.installed.namespace, self.release.installed.selector)
        # Quiet: the reconcile its last status write caused is over (a
        # reconcile it starts later counts as the touch's, and the check
        # is only weaker for it, never wrong: any write after convergence
        # is a failure).
        last = [-1]

        def quiet() -> int | None:
            now = self.reconciles()
            settled, last[0] = now == last[0], now
            return now if settled else None

        before = wait("the driver to be quiet", quiet)
        self.cluster.admin.call("PATCH", path, {"metadata": {"annotations": {"example.com/touched": "yes"},
                                                             "labels": {"touched": "yes"}}},
                                content_type="application/merge-patch+json")
        wait("the driver to reconcile the touched object", lambda: self.reconciles() > before or None)
        old = self.pod["metadata"]["name"]
        self.cluster.admin.delete(f"/api/v1/namespaces/{self.release.installed.namespace}/pods/{old}")
        [self.pod] = wait_ready_pods(self.cluster, self.release.installed, 1, not_named={old},
                                     what="the driver's pod replaced")
        wait("the new driver to reconcile the object", lambda: self.reconciles() > 0 or None)
        self.deleted_after = audit_now()

    def wrote_nothing_after(self, converged: str) -> None:
        """After `converged`: no write in the work namespace through the
        touch and the restart, and no request for the object once its
        finalizer was taken off (the last write of it)."""
        spec, work = self.built.spec, self.release.work
        records = [r for r in audit_records(self.cluster.audit_log, self.release.audit_offset,
                                            service_account_name(self.release.installed), agent=None)
                   if r.get("requestReceivedTimestamp", "") > converged]
        records.sort(key=lambda r: r["requestReceivedTimestamp"])

        def of_the_object(r: dict) -> bool:
            ref = r.get("objectRef", {})
            return ref.get("resource") == spec.plural and ref.get("namespace") == work and bool(ref.get("name"))

        writes = [i for i, r in enumerate(records)
                  if r["verb"] in WRITES and r.get("objectRef", {}).get("namespace") == work]
        quiet = [describe(records[i]) for i in writes if records[i]["requestReceivedTimestamp"] < self.deleted_after]
        assert quiet == [], ("written after convergence with nothing changed (a touch, a restart):\n"
                             + "\n".join(quiet))
        # The last write of the object itself is its finalizer's removal.
        removals = [i for i in writes if of_the_object(records[i]) and not records[i]["objectRef"].get("subresource")]
        assert removals, "no write of the finalizer's removal:\n" + "\n".join(describe(r) for r in records)
        after = [describe(r) for r in records[removals[-1] + 1:] if of_the_object(r)]
        assert after == [], "asked for the object after its finalizer was taken off:\n" + "\n".join(after)


def test_any_crate_it_writes_passes_its_own_fmt_and_clippy() -> None:
    """`metahook new` for names short and long, the kind from the name or
    given: each crate's `cargo fmt --check` and `cargo clippy --all-targets
    -D warnings`, unedited (their tests are the built crate's, renamed)."""
    for spec in LINTED:
        crate = scaffold(spec, SCAFFOLDS_DIR / "linted")
        run(["cargo", "fmt", "--", "--check"], crate, f"{spec.name}: cargo fmt --check", timeout=120)
        run(["cargo", "clippy", "--all-targets", "--locked", "--", "-D", "warnings"], crate,
            f"{spec.name}: cargo clippy")


def test_its_test_command_fails_on_a_lint() -> None:
    """scripts/test.sh lints in the tests' build (clippy-driver as the
    crate's compiler): a line clippy denies fails it, naming the lint."""
    spec = LINTED[1]
    crate = scaffold(spec, SCAFFOLDS_DIR / "linted")
    with (crate / "src" / "lib.rs").open("a") as lib:
        lib.write("\n/// Twice `n`.\npub fn twice(n: u32) -> u32 {\n    n.clone() * 2\n}\n")
    done = user_command([str(crate / "scripts" / "test.sh")], crate)
    assert done.returncode != 0, f"scripts/test.sh passed with a lint in src/lib.rs:\n{done.stderr[-3000:]}"
    assert "clone_on_copy" in done.stderr, done.stderr[-3000:]
