#!/usr/bin/env python3
"""The measuring half of bench/driver-memory.sh: create the Hellos in
batches, wait until every one has its Deployment and an observed status,
let the engine settle, restart the API server (a forced relist) and wait
again, while sampling the engine's RSS and CPU time from /proc every
second, its counters (reconciles, hook calls, relists) from /metrics and
the converged Hellos from the API; then the report and the chart.

    driver_memory.py run    --engine driver --pid PID --metrics URL --count N --control URL --out FILE ...
    driver_memory.py report --raw DIR [--allocator-size N]    # Markdown on stdout
    driver_memory.py plot   --raw DIR --out PNG               # needs matplotlib (the bench venv)

`run` creates and lists with the admin's client certificate ($KUBECONFIG):
its requests are not the engine's. Every wait is bounded.
"""

import argparse
import base64
import glob
import http.client
import json
import os
import signal
import ssl
import statistics
import sys
import threading
import time
import urllib.parse
import urllib.request

from driver_bench import hello_manifests, iso, kubectl, metrics, now, tally

CLK_TCK = os.sysconf("SC_CLK_TCK")
# Deployments' metadata only: the owner reference is all the tally reads.
METADATA_ONLY = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"


def proc(pid: int) -> dict | None:
    """VmRSS and VmHWM (KiB) and CPU seconds (utime + stime) of a process;
    None once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            status = dict(line.split(":", 1) for line in f if ":" in line)
        with open(f"/proc/{pid}/stat") as f:
            # After the command's name (in parentheses, maybe with spaces):
            # field 3 (state) on; utime and stime are fields 14 and 15.
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return {
        "rss": int(status["VmRSS"].split()[0]),
        "hwm": int(status["VmHWM"].split()[0]),
        "cpu": (int(fields[11]) + int(fields[12])) / CLK_TCK,
    }


class Api:
    """GETs with the client certificate of $KUBECONFIG's current user."""

    def __init__(self, workdir: str):
        config = json.loads(kubectl("config", "view", "--raw", "--minify", "-o", "json"))
        cluster, user = config["clusters"][0]["cluster"], config["users"][0]["user"]
        paths = {}
        for name, data in (
            ("ca", cluster["certificate-authority-data"]),
            ("cert", user["client-certificate-data"]),
            ("key", user["client-key-data"]),
        ):
            paths[name] = os.path.join(workdir, f"admin-{name}.pem")
            with open(paths[name], "wb") as f:
                f.write(base64.b64decode(data))
        self.context = ssl.create_default_context(cafile=paths["ca"])
        self.context.load_cert_chain(paths["cert"], paths["key"])
        server = urllib.parse.urlsplit(cluster["server"])
        self.host, self.port = server.hostname, server.port

    def items(self, path: str, accept: str = "application/json") -> list:
        """Every item of a list, in pages of 2,000."""
        items, token = [], ""
        connection = http.client.HTTPSConnection(self.host, self.port, context=self.context, timeout=60)
        try:
            while True:
                query = urllib.parse.urlencode({"limit": 2000, **({"continue": token} if token else {})})
                connection.request("GET", f"{path}?{query}", headers={"Accept": accept})
                response = connection.getresponse()
                body = response.read()
                if response.status != 200:
                    raise RuntimeError(f"GET {path}: {response.status} {body[:200]!r}")
                page = json.loads(body)
                items += page.get("items") or []  # null in an empty metadata list
                token = page["metadata"].get("continue")
                if not token:
                    return items
        finally:
            connection.close()


def control(base: str, path: str) -> None:
    """POST to the control plane's control endpoint (tests/cluster/control.go)."""
    request = urllib.request.Request(base + path, method="POST")
    with urllib.request.urlopen(request, timeout=180) as response:
        response.read()


def hook_calls(m: dict) -> int:
    return m.get("hook_calls", {}).get("sync", 0)


class Sampler:
    """Every second the engine's (and the hook server's) /proc figures,
    every two its counters, every `poll` seconds the converged Hellos;
    each sample stamped with seconds since `t0`."""

    def __init__(self, args: argparse.Namespace, api: Api):
        self.args, self.api = args, api
        self.t0 = time.monotonic()
        self.procs, self.counters, self.converged = [], [], []
        self.latest_converged = (0, 0)
        self.latest_counters = {}
        self.errors = []
        self.stopping = threading.Event()
        # Three threads: a frozen engine's /metrics or a restarting API
        # server must not hold up the /proc samples.
        self.threads = [
            threading.Thread(target=self.sample_procs, daemon=True),
            threading.Thread(target=self.sample_counters, daemon=True),
            threading.Thread(target=self.sample_converged, daemon=True),
        ]
        for thread in self.threads:
            thread.start()

    def now(self) -> float:
        return round(time.monotonic() - self.t0, 2)

    def sample_procs(self) -> None:
        while not self.stopping.is_set():
            engine = proc(self.args.pid)
            hooks = proc(self.args.hooks_pid) if self.args.hooks_pid else None
            if engine:
                self.procs.append({"t": self.now(), **engine, **({"hooks": hooks} if hooks else {})})
            self.stopping.wait(1.0)

    def sample_counters(self) -> None:
        while not self.stopping.is_set():
            try:
                m = metrics(self.args.metrics)
            except OSError:
                m = None  # frozen (the relist) or gone
            if m is not None:
                self.latest_counters = m
                self.counters.append({
                    "t": self.now(), "reconciles": m["reconciles"], "sync_calls": hook_calls(m),
                    "relists": m["relists"], "queue": m["queue"],
                })
            self.stopping.wait(2.0)

    def sample_converged(self) -> None:
        ns = self.args.namespace
        while not self.stopping.is_set():
            try:
                hellos = self.api.items(f"/apis/fraim.co.jp/v1/namespaces/{ns}/helloes")
                deployments = self.api.items(f"/apis/apps/v1/namespaces/{ns}/deployments", METADATA_ONLY)
            except (OSError, ValueError, RuntimeError, http.client.HTTPException) as e:
                hellos = None  # the API server is restarting
                self.errors.append({"t": self.now(), "error": str(e)[:200]})
            if hellos is not None:
                synced, _ = tally(hellos, deployments)
                self.latest_converged = (len(hellos), synced)
                self.converged.append({"t": self.now(), "hellos": len(hellos), "converged": synced})
            self.stopping.wait(self.args.poll)

    def stop(self) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=120)

    def window(self, seconds: float) -> list:
        """The engine's samples of the last `seconds`."""
        end = self.now()
        return [s for s in self.procs if s["t"] >= end - seconds]


def wait_for(what: str, deadline: float, condition, sampler: "Sampler", every: float = 1.0) -> None:
    while not condition():
        if not all(thread.is_alive() for thread in sampler.threads):
            raise SystemExit("driver_memory: a sampling thread failed (above)")
        if proc(sampler.args.pid) is None:
            raise SystemExit(f"driver_memory: the engine (pid {sampler.args.pid}) exited; see its log")
        if time.monotonic() > deadline:
            raise SystemExit(f"driver_memory: {what}: not within the time allowed")
        time.sleep(every)


def wait_quiet(sampler: Sampler, deadline: float, quiet_for: float) -> None:
    """Until neither reconciles nor sync hook calls moved, the queue was
    empty and the engine used under 5% of a CPU, for `quiet_for` seconds
    (the CPU: Metacontroller lists with no hook call to show for it)."""
    last, since, cpu_since = None, time.monotonic(), 0.0
    while time.monotonic() < deadline:
        engine = proc(sampler.args.pid)
        if engine is None:
            raise SystemExit(f"driver_memory: the engine (pid {sampler.args.pid}) exited; see its log")
        m = sampler.latest_counters
        key = (m.get("reconciles"), hook_calls(m))
        busy = engine["cpu"] - cpu_since > 0.05 * (time.monotonic() - since)
        if key != last or m.get("queue", 0) > 0 or busy:
            last, since, cpu_since = key, time.monotonic(), engine["cpu"]
        elif time.monotonic() - since >= quiet_for:
            return
        time.sleep(1.0)
    raise SystemExit("driver_memory: the engine did not go quiet in time")


def snapshot(sampler: Sampler, window: float) -> dict:
    """RSS now (the median of the last `window` seconds), the peak so far
    (VmHWM), CPU seconds and counters."""
    samples = sampler.window(window)
    last = sampler.procs[-1]
    m = sampler.latest_counters
    out = {
        "t": sampler.now(),
        "rss_kb": statistics.median(s["rss"] for s in samples),
        "hwm_kb": last["hwm"],
        "cpu": last["cpu"],
        "reconciles": m.get("reconciles", 0),
        "sync_calls": hook_calls(m),
        "relists": m.get("relists", 0),
        "results": m.get("results", {}),
    }
    if "hooks" in last:
        out["hooks_cpu"] = last["hooks"]["cpu"]
        out["hooks_rss_kb"] = last["hooks"]["rss"]
    return out


def object_sizes(api: Api, namespace: str) -> dict:
    """The mean size of a Hello and of a Deployment as compact JSON, with
    and without managedFields."""
    def mean_size(items: list) -> int:
        return sum(len(json.dumps(i, separators=(",", ":"))) for i in items) // max(1, len(items))

    out = {}
    for kind, group, resource in (("Hello", "/apis/fraim.co.jp/v1", "helloes"), ("Deployment", "/apis/apps/v1", "deployments")):
        items = api.items(f"{group}/namespaces/{namespace}/{resource}")
        full = mean_size(items)
        for item in items:
            item["metadata"].pop("managedFields", None)
        out[kind] = {"bytes": full, "without_managed_fields": mean_size(items)}
    return out


def run(args: argparse.Namespace) -> None:
    workdir = os.path.dirname(os.path.abspath(args.out))
    deadline = time.monotonic() + args.timeout
    api = Api(workdir)
    sampler = Sampler(args, api)
    marks = {}
    try:
        time.sleep(args.idle)
        idle = snapshot(sampler, args.idle)
        # The Hellos, BATCH at a time: one `kubectl create -f` per batch,
        # one POST per Hello.
        marks["create"] = sampler.now()
        start = now()
        batches = []
        for first in range(0, args.count, args.batch):
            count = min(args.batch, args.count - first)
            path = os.path.join(workdir, "hellos-batch.yaml")
            with open(path, "w") as f:
                f.write(hello_manifests(args.namespace, count, replicas=0, first=first))
            kubectl("create", "-f", path, "-o", "name", timeout=max(60.0, deadline - time.monotonic()))
            batches.append(sampler.now())
        marks["created"] = sampler.now()
        wait_for(
            "every Hello converged",
            deadline,
            lambda: sampler.latest_converged == (args.count, args.count),
            sampler,
        )
        marks["converged"] = sampler.converged[-1]["t"]
        # Settled: the controller-manager's Deployment status writes and
        # the engine's answers to them are over.
        wait_quiet(sampler, deadline, args.quiet)
        time.sleep(args.settle)
        marks["steady"] = sampler.now()
        steady = snapshot(sampler, args.window)
        with open(f"/proc/{args.pid}/smaps_rollup") as f:
            smaps = f.read()
        objects = object_sizes(api, args.namespace)
        debug = None
        if args.debug:
            with urllib.request.urlopen(args.debug, timeout=60) as response:
                debug = json.loads(response.read())
        # A forced relist: with the engine frozen, the API server restarts
        # (every watch breaks), a write moves etcd's revision past every
        # one the engine has seen and etcd forgets its history: each watch
        # it resumes gets 410 Gone, and it lists again (as
        # tests/e2e/faults.rs does). A restart alone does not do it for
        # client-go, which resumes its watches. The peak from here on:
        # VmHWM reset to the current RSS ("5" to clear_refs), and the
        # samples' maximum.
        try:
            with open(f"/proc/{args.pid}/clear_refs", "w") as f:
                f.write("5")
            hwm_reset = True
        except OSError:
            hwm_reset = False
        marks["relist"] = sampler.now()
        relist_start = now()
        os.kill(args.pid, signal.SIGSTOP)
        try:
            control(args.control, "/apiserver/stop?grace=5")
            control(args.control, "/apiserver/start")
            kubectl("create", "configmap", f"relist-{os.getpid()}", "-n", "default")
            control(args.control, "/etcd/compact")
        finally:
            os.kill(args.pid, signal.SIGCONT)
        marks["apiserver_back"] = sampler.now()
        time.sleep(args.relist_wait)
        if args.engine == "driver":
            wait_for("the driver's caches to list again", deadline, lambda: sampler.latest_counters.get("relists", 0) > steady["relists"], sampler)
        wait_quiet(sampler, deadline, args.quiet)
        wait_for("every Hello converged after the relist", deadline, lambda: sampler.latest_converged == (args.count, args.count), sampler)
        time.sleep(args.relist_settle)
        marks["relisted"] = sampler.now()
        relist_end = now()
        after = snapshot(sampler, args.window)
        relist_samples = [s["rss"] for s in sampler.procs if s["t"] >= marks["relist"]]
    finally:
        sampler.stop()
    json.dump(
        {
            "engine": args.engine,
            "allocator": args.allocator,
            "count": args.count,
            "batch": args.batch,
            "poll": args.poll,
            "start": iso(start),
            "relist_start": iso(relist_start),
            "relist_end": iso(relist_end),
            "marks": marks,
            "batches": batches,
            "converge_seconds": round(marks["converged"] - marks["created"], 1),
            "create_seconds": round(marks["created"] - marks["create"], 1),
            "idle": idle,
            "steady": steady,
            "initial_peak_kb": steady["hwm_kb"],
            "initial_peak_sampled_kb": max(s["rss"] for s in sampler.procs if s["t"] < marks["relist"]),
            "relist_peak_kb": after["hwm_kb"] if hwm_reset else max(relist_samples),
            "relist_peak_sampled_kb": max(relist_samples),
            "relist_peak_from": "VmHWM" if hwm_reset else "samples",
            "after_relist": after,
            "object_bytes": objects,
            "smaps_rollup": smaps,
            "debug_driver": debug,
            "procs": sampler.procs,
            "counters": sampler.counters,
            "converged": sampler.converged,
            "list_errors": sampler.errors,
        },
        open(args.out, "w"),
        indent=None,
    )


def runs(raw: str) -> list:
    out = []
    for path in sorted(glob.glob(os.path.join(raw, "*.json"))):
        with open(path) as f:
            d = json.load(f)
        if isinstance(d, dict) and "engine" in d and "steady" in d:
            d["audit"] = audit_of(path)
            out.append(d)
    return out


def audit_of(path: str) -> dict:
    """The engine's requests during the relist (audit log), if measured."""
    try:
        with open(path[: -len(".json")] + "-audit-relist.json") as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def fit(points: list) -> tuple[float, float] | None:
    """Least squares: (slope, intercept) of y over x; None under two sizes."""
    xs = sorted({x for x, _ in points})
    if len(xs) < 2:
        return None
    mx = statistics.mean(x for x, _ in points)
    my = statistics.mean(y for _, y in points)
    slope = sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x, _ in points)
    return slope, my - slope * mx


ENGINE_NAMES = {"driver": "driver", "metacontroller": "Metacontroller v4.17.2"}
MIB = 1024


def cpu_seconds(d: dict) -> tuple[float, float | None, int]:
    """CPU seconds from the first create to the steady state: the
    engine's, and with its hook server's (Metacontroller; the driver calls
    its hooks in-process); and the reconciles in that time: the driver's
    count, Metacontroller's sync hook calls."""
    idle, steady = d["idle"], d["steady"]
    key = "reconciles" if d["engine"] == "driver" else "sync_calls"
    n = steady[key] - idle[key]
    if n <= 0:
        raise SystemExit(f"driver_memory: no reconciles counted for {d['engine']} at N={d['count']}")
    own = steady["cpu"] - idle["cpu"]
    both = None
    if "hooks_cpu" in steady:
        both = own + steady["hooks_cpu"] - idle["hooks_cpu"]
    return own, both, n


def per_1000(d: dict) -> str:
    """CPU seconds per 1,000 reconciles and per 1,000 parents, as cells."""
    own, both, n = cpu_seconds(d)
    cells = []
    for per in (n, d["count"]):
        cells.append(f"{own / per * 1000:.2f}" + (f" ({both / per * 1000:.2f})" if both is not None else ""))
    return " | ".join(cells)


def report(args: argparse.Namespace) -> None:
    all_runs = runs(args.raw)
    main = [d for d in all_runs if d["allocator"] == "glibc"]
    polls = " or ".join(f"{p:g}" for p in sorted({d.get("poll", 5) for d in main}))
    print("Parents: Hellos with `replicas: 0` (no pods; the kubelet stand-in), each with its child, a Deployment "
          f"(and the controller-manager's ReplicaSet, not watched by either engine); created {main[0]['batch'] if main else '?'} "
          "at a time by `kubectl create -f` after 5 s idle. Converged: the first list of the Hellos (every "
          f"{polls} s) in which each has its Deployment and "
          "observedGeneration == generation. RSS is VmRSS sampled every second; steady: the median of "
          f"the last {args.window:.0f} s after converging, going quiet and settling; peaks: VmHWM (reset before the relist). "
          "The relist: the engine frozen (SIGSTOP), kube-apiserver restarted, one write, etcd compacted, the engine "
          "thawed: every watch it resumes gets 410 Gone. Lists in the relist: its LISTs and client-go's streamed "
          "lists (watches with sendInitialEvents=true), from the audit log. CPU: utime + stime from the first create "
          "to the steady state; reconciles: the driver's count, Metacontroller's sync hook calls.")
    print()
    print("| engine | N | create s | converged s after the last create | idle MiB | initial peak MiB | steady MiB "
          "| relist peak MiB (× steady) | after relist MiB | list requests in the relist | CPU s per 1,000 reconciles "
          "(with hook server) | CPU s per 1,000 parents (with hook server) | reconciles per parent |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for d in sorted(main, key=lambda d: (d["engine"], d["count"])):
        n = cpu_seconds(d)[2]
        steady_kb = d["steady"]["rss_kb"]
        verbs = d["audit"].get("verbs", {})
        lists = f"{verbs.get('list', 0) + d['audit'].get('streamed_lists', 0)}" if verbs else "?"
        print(
            f"| {ENGINE_NAMES[d['engine']]} | {d['count']:,} | {d['create_seconds']:.0f} | {d['converge_seconds']:.1f} "
            f"| {d['idle']['rss_kb'] / MIB:.1f} | {d['initial_peak_kb'] / MIB:.1f} | **{steady_kb / MIB:.1f}** "
            f"| {d['relist_peak_kb'] / MIB:.1f} (**{d['relist_peak_kb'] / steady_kb:.2f}×**) "
            f"| {d['after_relist']['rss_kb'] / MIB:.1f} | {lists} "
            f"| {per_1000(d)} | {n / d['count']:.1f} |"
        )
    slopes = {}
    for engine in ("driver", "metacontroller"):
        mine = [d for d in main if d["engine"] == engine]
        steady = fit([(d["count"], d["steady"]["rss_kb"]) for d in mine])
        if steady is None:
            continue
        if not slopes:
            print()
            print("Per parent+child pair (the slope of steady RSS over N, least squares) and the floor (its intercept):")
            print()
            print("| engine | sizes | KiB per pair, steady | floor MiB | KiB per pair, initial peak "
                  "| KiB per pair, relist peak | parents in 256 MiB (steady) |")
            print("|---|---|---|---|---|---|---|")
        initial = fit([(d["count"], d["initial_peak_kb"]) for d in mine])
        relist = fit([(d["count"], d["relist_peak_kb"]) for d in mine])
        slopes[engine] = steady[0]
        fits = int((256 * MIB - steady[1]) / steady[0]) if steady[0] > 0 else 0
        sizes = ", ".join(f"{n:,}" for n in sorted({d["count"] for d in mine}))
        print(
            f"| {ENGINE_NAMES[engine]} | {sizes} | **{steady[0]:.1f}** | {steady[1] / MIB:.1f} "
            f"| {initial[0]:.1f} | {relist[0]:.1f} | {fits:,} |"
        )
    sizes = [d["object_bytes"] for d in main if d.get("object_bytes")]
    if sizes:
        per_kind = {k: statistics.mean(s[k]["without_managed_fields"] for s in sizes) for k in sizes[0]}
        full = {k: statistics.mean(s[k]["bytes"] for s in sizes) for k in sizes[0]}
        print()
        print("The objects as compact JSON without managedFields (with): "
              + ", ".join(f"{k} {per_kind[k]:,.0f} B ({full[k]:,.0f} B)" for k in per_kind)
              + f"; a pair {sum(per_kind.values()) / 1024:.1f} KiB ({sum(full.values()) / 1024:.1f} KiB).")
    if len(slopes) == 2 and slopes["driver"] > 0:
        print()
        print(f"Metacontroller holds {slopes['metacontroller'] / slopes['driver']:.1f}× the driver's memory per pair.")
    others = [d for d in all_runs if d["count"] == args.allocator_size and d["engine"] == "driver"]
    if len({d["allocator"] for d in others}) > 1:
        print()
        print(f"The driver's global allocator, N = {args.allocator_size:,}:")
        print()
        print("| allocator | steady MiB | relist peak MiB (× steady) | after relist MiB | initial peak MiB "
              "| CPU s per 1,000 reconciles | CPU s per 1,000 parents | converged s after the last create |")
        print("|---|---|---|---|---|---|---|---|")
        for d in sorted(others, key=lambda d: list(ALLOCATOR_NAMES).index(d["allocator"]) if d["allocator"] in ALLOCATOR_NAMES else 99):
            s = d["steady"]["rss_kb"]
            print(
                f"| {ALLOCATOR_NAMES.get(d['allocator'], d['allocator'])} | **{s / MIB:.1f}** "
                f"| {d['relist_peak_kb'] / MIB:.1f} ({d['relist_peak_kb'] / s:.2f}×) "
                f"| {d['after_relist']['rss_kb'] / MIB:.1f} | {d['initial_peak_kb'] / MIB:.1f} | {per_1000(d)} "
                f"| {d['converge_seconds']:.1f} |"
            )


ALLOCATOR_NAMES = {
    "glibc": "glibc (the default)",
    "glibc-image": "glibc, MALLOC_MMAP_THRESHOLD_=131072 (as the image sets it)",
    "glibc-arenas2": "glibc, MALLOC_ARENA_MAX=2",
    "jemalloc": "jemalloc (`--features jemalloc`)",
    "mimalloc": "mimalloc (`--features mimalloc`)",
}


def plot(args: argparse.Namespace) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    main = sorted((d for d in runs(args.raw) if d["allocator"] == "glibc"), key=lambda d: (d["engine"], d["count"]))
    if not main:
        raise SystemExit("driver_memory: no runs to draw")
    colours = {"driver": "tab:blue", "metacontroller": "tab:orange"}
    sizes = sorted({d["count"] for d in main})
    styles = ["-", "--", ":", "-."]  # the largest N solid
    figure, (top, bottom) = plt.subplots(2, 1, figsize=(10, 7.5), sharex=True, height_ratios=[3, 2])
    for d in main:
        t0 = d["marks"]["create"]
        style = styles[(len(sizes) - 1 - sizes.index(d["count"])) % len(styles)]
        label = f"{ENGINE_NAMES[d['engine']]}, {d['count']:,} Hellos"
        top.plot([s["t"] - t0 for s in d["procs"]], [s["rss"] / MIB for s in d["procs"]],
                 style, color=colours[d["engine"]], label=label, linewidth=1.4)
        bottom.plot([s["t"] - t0 for s in d["converged"]], [s["converged"] for s in d["converged"]],
                    style, color=colours[d["engine"]], label=label, linewidth=1.4)
        for axis in (top, bottom):
            axis.axvspan(d["marks"]["relist"] - t0, d["marks"]["apiserver_back"] - t0, color=colours[d["engine"]], alpha=0.12)
    top.set_ylabel("RSS (MiB)")
    top.set_ylim(bottom=0)
    top.legend(loc="upper left", fontsize=8)
    top.set_title("Hellos (replicas: 0) and their Deployments: the engine's RSS and the converged parents\n"
                  "from the first create; shaded: the API server restarting, the engine frozen (it lists again after)",
                  fontsize=10)
    bottom.set_ylabel("converged Hellos")
    bottom.set_xlabel("seconds since the first create")
    bottom.set_ylim(bottom=0)
    for axis in (top, bottom):
        axis.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(args.out, dpi=110)
    print(args.out)


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--engine", choices=["driver", "metacontroller"], required=True)
    r.add_argument("--allocator", default="glibc")
    r.add_argument("--pid", type=int, required=True, help="the engine's process")
    r.add_argument("--hooks-pid", type=int, help="the hook server beside Metacontroller")
    r.add_argument("--metrics", required=True, help="the driver's /metrics, or the hook server's")
    r.add_argument("--debug", help="the driver's /debug/driver, saved at the steady state")
    r.add_argument("--control", required=True, help="the control plane's control endpoint")
    r.add_argument("--namespace", default="bench")
    r.add_argument("--count", type=int, required=True)
    r.add_argument("--batch", type=int, default=500)
    r.add_argument("--idle", type=float, default=5.0, help="seconds sampled before the first create")
    r.add_argument("--poll", type=float, default=5.0, help="seconds between two lists of the Hellos")
    r.add_argument("--quiet", type=float, default=10.0, help="seconds without a reconcile that end a phase")
    r.add_argument("--settle", type=float, default=60.0, help="seconds after going quiet before the steady state")
    r.add_argument("--window", type=float, default=20.0, help="seconds whose median RSS is the steady state")
    r.add_argument("--relist-wait", type=float, default=20.0, help="seconds after the restart before waiting for quiet")
    r.add_argument("--relist-settle", type=float, default=30.0)
    r.add_argument("--timeout", type=float, required=True)
    r.add_argument("--out", required=True)
    p = sub.add_parser("report")
    p.add_argument("--raw", required=True)
    p.add_argument("--allocator-size", type=int, default=5000)
    p.add_argument("--window", type=float, default=20.0)
    g = sub.add_parser("plot")
    g.add_argument("--raw", required=True)
    g.add_argument("--out", required=True)
    args = parser.parse_args()
    {"run": run, "report": report, "plot": plot}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
