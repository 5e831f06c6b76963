#!/usr/bin/env python3
"""The measuring half of bench/driver.sh: create the Hellos and wait for the
driver to converge, wait for a resync, read the API server's audit log and
the driver's /metrics. Standard library only; every wait is bounded.

    driver_bench.py converge --namespace NS --count N --metrics URL --timeout S --out FILE
    driver_bench.py resync   --count N --metrics URL --timeout S --out FILE
    driver_bench.py audit    --log FILE --user NAME --since T --until T

Times are UTC ISO 8601, as the audit log writes them. The polling kubectl
runs with the admin kubeconfig ($KUBECONFIG): its requests are not the
driver's (the driver has a user of its own).
"""

import argparse
import collections
import datetime as dt
import json
import os
import re
import subprocess
import sys
import time
import urllib.request

WRITES = ("create", "update", "patch", "delete", "deletecollection")


def now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def iso(t: dt.datetime) -> str:
    return t.isoformat(timespec="microseconds").replace("+00:00", "Z")


def parse_time(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def kubectl(*args: str, timeout: float = 120) -> str:
    return subprocess.run(
        ["kubectl", *args], check=True, capture_output=True, text=True, timeout=timeout
    ).stdout


def metrics(url: str | None) -> dict:
    """The driver's metahook_driver_* samples, summed over labels except
    the ones kept: reconciles (all results), reconciles by result, queue
    depth, API requests by method, throttling, cache relists; and hook
    calls by hook (the driver's, or those `metahook serve` answered).
    Without a URL (another engine: Metacontroller), nothing."""
    if url is None:
        return {}
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    out = {"reconciles": 0, "results": {}, "queue": 0, "requests": {}, "throttled": 0, "throttled_seconds": 0.0,
           "relists": 0, "hook_calls": {}}
    for line in text.splitlines():
        if not line.startswith("metahook_"):
            continue
        name_labels, _, value = line.rpartition(" ")
        name, _, labels = name_labels.partition("{")
        labels = dict(
            part.split("=", 1) for part in labels.rstrip("}").split(",") if "=" in part
        )
        labels = {k: v.strip('"') for k, v in labels.items()}
        v = float(value)
        if name == "metahook_driver_reconciles_total":
            out["reconciles"] += int(v)
            out["results"][labels.get("result", "?")] = int(v)
        elif name == "metahook_driver_queue_depth":
            out["queue"] += int(v)
        elif name == "metahook_driver_api_requests_total":
            out["requests"][labels.get("method", "?")] = int(v)
        elif name == "metahook_driver_api_throttled_requests_total":
            out["throttled"] = int(v)
        elif name == "metahook_driver_api_throttled_seconds_total":
            out["throttled_seconds"] = v
        elif name == "metahook_driver_cache_relists_total":
            out["relists"] += int(v)
        elif name in ("metahook_driver_hook_calls_total", "metahook_hook_requests_total"):
            # By hook: the driver's in-process calls, or the requests
            # `metahook serve` answered (Metacontroller's calls).
            hook = labels.get("hook", "?")
            out["hook_calls"][hook] = out["hook_calls"].get(hook, 0) + int(v)
    return out


def wait_quiet(url: str | None, deadline: float, quiet_for: float = 5.0, at_least: int = 0) -> dict:
    """Until the driver has done `at_least` reconciles, its queue is empty
    and neither its reconcile nor its request count moved for `quiet_for`
    seconds. Without a URL (Metacontroller), `quiet_for` seconds of the
    audit log's silence are judged afterwards by the caller: this waits."""
    if url is None:
        time.sleep(quiet_for)
        return {}
    last, since = None, time.monotonic()
    while time.monotonic() < deadline:
        m = metrics(url)
        key = (m["reconciles"], sum(m["requests"].values()))
        if key != last or m["queue"] > 0 or m["reconciles"] < at_least:
            last, since = key, time.monotonic()
        elif time.monotonic() - since >= quiet_for:
            return m
        time.sleep(0.5)
    raise SystemExit(f"driver_bench: the driver did not go quiet in time (last: {last})")


SHARD_LABEL = "metahook.dev/shard"


def hello_manifests(namespace: str, count: int, shards: int = 0, replicas: int = 1, first: int = 0) -> str:
    """N Hellos (hello-<first> on); with `shards`, Hello i labelled
    SHARD_LABEL=s<i mod shards>."""
    docs = []
    for i in range(first, first + count):
        labels = f"  labels:\n    {SHARD_LABEL}: s{i % shards}\n" if shards else ""
        docs.append(
            "apiVersion: fraim.co.jp/v1\nkind: Hello\n"
            f"metadata:\n  name: hello-{i:04d}\n  namespace: {namespace}\n{labels}"
            f"spec:\n  replicas: {replicas}\n"
        )
    return "---\n".join(docs)


def state(namespace: str) -> tuple[int, int, int]:
    """(Hellos, Hellos with their Deployment and observedGeneration ==
    generation, of those the ones whose status says every replica ready)."""
    hellos = json.loads(kubectl("get", "helloes", "-n", namespace, "-o", "json"))["items"]
    deployments = json.loads(kubectl("get", "deployments", "-n", namespace, "-o", "json"))["items"]
    return (len(hellos), *tally(hellos, deployments))


def tally(hellos: list, deployments: list) -> tuple[int, int]:
    """Of these Hellos, (the ones with their Deployment among these and
    observedGeneration == generation, of those the ones whose status says
    every replica ready). The Deployments' metadata is enough."""
    owners = {
        ref["uid"]
        for d in deployments
        for ref in d["metadata"].get("ownerReferences", [])
        if ref.get("controller") and ref.get("kind") == "Hello"
    }
    synced = ready = 0
    for h in hellos:
        status = h.get("status") or {}
        if h["metadata"]["uid"] in owners and status.get("observedGeneration") == h["metadata"]["generation"]:
            synced += 1
            if status.get("readyReplicas") == h["spec"]["replicas"]:
                ready += 1
    return synced, ready


def converge(args: argparse.Namespace) -> None:
    manifests = os.path.join(os.path.dirname(args.out), f"hellos-{args.count}.yaml")
    with open(manifests, "w") as f:
        f.write(hello_manifests(args.namespace, args.count, args.shards, args.replicas))
    deadline = time.monotonic() + args.timeout
    before = metrics(args.metrics)
    start = now()
    t0 = time.monotonic()
    # One `kubectl create` of a multi-document file: one POST per Hello,
    # sent one after another by one client.
    kubectl("create", "-f", manifests, "-o", "name", timeout=args.timeout)
    created = time.monotonic() - t0
    converged = ready = None
    samples = []
    while time.monotonic() < deadline:
        total, synced, done = state(args.namespace)
        elapsed = time.monotonic() - t0
        samples.append((round(elapsed, 1), synced, done))
        if converged is None and total == args.count and synced == args.count:
            converged = elapsed
            at_converged = metrics(args.metrics)
            converged_at = now()
        if converged is not None and done == args.count:
            ready = elapsed
            break
        time.sleep(args.interval)
    if converged is None or ready is None:
        raise SystemExit(f"driver_bench: not converged within {args.timeout} s; last samples {samples[-3:]}")
    quiet = wait_quiet(args.metrics, deadline, quiet_for=args.quiet)
    quiet_at = now()
    json.dump(
        {
            "start": iso(start),
            "created_seconds": round(created, 2),
            "converged_seconds": round(converged, 2),
            "converged_at": iso(converged_at),
            "ready_seconds": round(ready, 2),
            "quiet_at": iso(quiet_at),
            "metrics_before": before,
            "metrics_converged": at_converged,
            "metrics_quiet": quiet,
            "samples": samples,
        },
        open(args.out, "w"),
        indent=1,
    )


def resync(args: argparse.Namespace) -> None:
    """A driver just started on a converged cluster: its first pass (every
    parent, from a fresh cache) and then its first periodic resync."""
    deadline = time.monotonic() + args.timeout
    start = parse_time(args.start)
    first = wait_quiet(args.metrics, deadline, at_least=args.count)
    first_at = now()
    # The periodic resync queues every parent again: at least N more.
    second = wait_quiet(args.metrics, deadline, at_least=first["reconciles"] + args.count)
    second_at = now()
    json.dump(
        {
            "start": iso(start),
            "first_pass_done": iso(first_at),
            "resync_done": iso(second_at),
            "metrics_first": first,
            "metrics_resync": second,
        },
        open(args.out, "w"),
        indent=1,
    )


def audit(args: argparse.Namespace) -> None:
    """The driver's requests in [since, until]: one per audit ID (a watch
    is logged at ResponseStarted and again at ResponseComplete), by verb
    and by verb + resource."""
    since, until = parse_time(args.since), parse_time(args.until)
    seen = set()
    verbs = collections.Counter()
    detail = collections.Counter()
    streamed_lists = 0
    with open(args.log) as f:
        for line in f:
            if args.user not in line:  # cheaper than parsing every line
                continue
            event = json.loads(line)
            if event["auditID"] in seen:
                continue
            if event.get("user", {}).get("username") != args.user:
                continue
            if not event.get("userAgent", "").startswith(args.user_agent):
                continue
            at = parse_time(event["requestReceivedTimestamp"])
            if not since <= at <= until:
                continue
            seen.add(event["auditID"])
            ref = event.get("objectRef") or {}
            resource = ref.get("resource", "?") + ("/" + ref["subresource"] if ref.get("subresource") else "")
            verbs[event["verb"]] += 1
            detail[f'{event["verb"]} {resource}'] += 1
            # client-go's lists: a watch that sends every object first.
            if event["verb"] == "watch" and "sendInitialEvents=true" in event.get("requestURI", ""):
                streamed_lists += 1
    json.dump(
        {
            "total": sum(verbs.values()),
            "writes": sum(n for v, n in verbs.items() if v in WRITES),
            "verbs": dict(verbs),
            "detail": dict(detail),
            "streamed_lists": streamed_lists,
        },
        sys.stdout,
    )



def shard_audit(args: argparse.Namespace) -> None:
    """Per shard user: requests by verb and the Hellos (and their
    Deployments, named after them) it wrote; and how many objects were
    written by more than one shard."""
    since, until = parse_time(args.since), parse_time(args.until)
    seen = set()
    verbs = {user: collections.Counter() for user in args.users}
    writers = collections.defaultdict(set)
    with open(args.log) as f:
        for line in f:
            event = json.loads(line)
            user = event.get("user", {}).get("username")
            if user not in verbs or event["auditID"] in seen:
                continue
            if not event.get("userAgent", "").startswith("metahook/"):
                continue
            if not since <= parse_time(event["requestReceivedTimestamp"]) <= until:
                continue
            seen.add(event["auditID"])
            verbs[user][event["verb"]] += 1
            ref = event.get("objectRef") or {}
            if event["verb"] in WRITES and ref.get("resource") in ("helloes", "deployments") and ref.get("name"):
                writers[(ref["resource"], ref["name"])].add(user)
    json.dump(
        {
            "users": {
                u: {"total": sum(v.values()), "verbs": dict(v), "objects_written": sum(1 for w in writers.values() if u in w)}
                for u, v in verbs.items()
            },
            "written_by_several": sorted(f"{r}/{n}" for (r, n), w in writers.items() if len(w) > 1),
        },
        sys.stdout,
    )


def loopback_hooks(args: argparse.Namespace) -> None:
    """A CompositeController from stdin with each webhook's Service
    reference replaced by the loopback URL of `metahook serve`."""
    # The declaration writes a webhook's path before or after its service.
    text, services = re.subn(
        r"^( +)service:\n\1  name: metahook\n\1  namespace: metahook\n\1  port: 80\n", "", sys.stdin.read(), flags=re.M
    )
    text, paths = re.subn(r"^( +)path: (/\S*)$", rf"\1url: http://127.0.0.1:{args.port}\2", text, flags=re.M)
    if services == 0 or services != paths or "service:" in text:
        raise SystemExit(f"driver_bench: loopback-hooks: {services} webhook services and {paths} paths replaced")
    sys.stdout.write(text)


def mc_row(args: argparse.Namespace) -> None:
    """One Markdown row of Metacontroller's figures."""
    c = json.load(open(f"{args.raw}/{args.tag}-converge.json"))
    a = json.load(open(f"{args.raw}/{args.tag}-audit-converge.json"))
    verbs = ", ".join(f"{v} {a['verbs'][v]}" for v in sorted(a["verbs"], key=lambda v: -a["verbs"][v]))
    budget = "unbounded" if args.budget == "none" else args.budget.replace("/", " / ")
    print(
        f"| {args.count} | {budget} | {c['created_seconds']:.1f} | **{c['converged_seconds']:.1f}** "
        f"| {c['ready_seconds']:.1f} | {a['total']}: {verbs} | {a['total'] / args.count:.2f} "
        f"| {args.rss_kb // 1024} | {args.loadavg} |"
    )

def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("converge")
    c.add_argument("--namespace", required=True)
    c.add_argument("--count", type=int, required=True)
    c.add_argument("--metrics", help="the driver's /metrics; leave out for Metacontroller")
    c.add_argument("--quiet", type=float, default=5.0, help="seconds without a change that end a run")
    c.add_argument("--timeout", type=float, required=True)
    c.add_argument("--interval", type=float, default=2.0)
    c.add_argument("--out", required=True)
    c.add_argument("--shards", type=int, default=0, help=f"label the Hellos {SHARD_LABEL}=s0..s<K-1> in turn")
    c.add_argument("--replicas", type=int, default=1, help="each Hello's spec.replicas")
    r = sub.add_parser("resync")
    r.add_argument("--count", type=int, required=True)
    r.add_argument("--start", required=True, help="when the driver was started")
    r.add_argument("--metrics", required=True)
    r.add_argument("--timeout", type=float, required=True)
    r.add_argument("--out", required=True)
    a = sub.add_parser("audit")
    a.add_argument("--log", required=True)
    a.add_argument("--user", required=True)
    a.add_argument("--since", required=True)
    a.add_argument("--until", required=True)
    a.add_argument("--user-agent", default="metahook/", help="the engine's User-Agent prefix")
    sa = sub.add_parser("shard-audit")
    sa.add_argument("--log", required=True)
    sa.add_argument("--since", required=True)
    sa.add_argument("--until", required=True)
    sa.add_argument("users", nargs="+")
    h = sub.add_parser("loopback-hooks")
    h.add_argument("--port", type=int, required=True)
    m = sub.add_parser("mc-row")
    m.add_argument("--raw", required=True)
    m.add_argument("--tag", required=True)
    m.add_argument("--count", type=int, required=True)
    m.add_argument("--budget", required=True)
    m.add_argument("--loadavg", required=True)
    m.add_argument("--rss-kb", type=int, required=True)
    args = parser.parse_args()
    {
        "converge": converge,
        "resync": resync,
        "audit": audit,
        "shard-audit": shard_audit,
        "loopback-hooks": loopback_hooks,
        "mc-row": mc_row,
    }[args.command](args)


if __name__ == "__main__":
    main()
