"""What a change waits for when no engine runs, or none leads
(bench/restart-wait.sh); and, for comparison, single changes at steady state.

    restart_wait.py measure --namespace NS --hello NAME --replicas R
        --metrics URL [--ready URL] --timeout S --log FILE --out JSON -- ENGINE...
    restart_wait.py leader --namespace NS --hello NAME --replicas R --lease NAME
        --kill PID --standby PID --metrics URL [--ready URL] --timeout S --out JSON
    restart_wait.py steady --namespace NS --replicas R --out JSON NAME...
    restart_wait.py quiet --metrics URL --at-least N --timeout S

`measure` watches the Hello's Deployment (`kubectl get --watch`), starts
ENGINE (the driver, or Metacontroller), and records from that start: when
`--ready` first answers 200 (the driver's /readyz: its caches synced), when
the Deployment first carries `spec.replicas` R, and how many hook calls
(`sync`) the engine had made by then, from `--metrics` (the driver's own,
or `metahook serve`'s beside Metacontroller, less what it counted before).
Then stops ENGINE (SIGTERM) and writes the figures as JSON.

`leader` is the same around a leader change: with a leader and a standby
running, it kills the leader (`--kill`, SIGKILL: its Lease is not given
up), scales the Hello at once, and records from the kill when the Lease
names another holder (the takeover), when `--ready` (the standby's) first
answers, and when the Deployment carries R. The standby is left running.

`steady` scales each named Hello to R, one at a time, and records each
change's wait: from the Hello's event carrying R to its Deployment's, both
seen by watches opened before the change (the same path, so kubectl's own
start-up is not counted).

`quiet` waits until the sync hook calls counted at `--metrics`, less
`--before`, reach N and have not moved for 5 s, nor the driver's reconciles: the
engine has confirmed every parent and gone quiet.
"""

import argparse
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from driver_bench import metrics  # noqa: E402


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return response.status == 200
    except OSError:
        return False


def watch_field(namespace: str, kind: str, name: str, jsonpath: str, lines: "queue.Queue[tuple[float, str]]") -> subprocess.Popen:
    """A field of one object, each value as the API server sends it (the
    object as it is first, then every change), with the time it arrived."""
    watcher = subprocess.Popen(
        ["kubectl", "get", kind, name, "-n", namespace, "--watch",
         "-o", f"jsonpath={{{jsonpath}}}{{\"\\n\"}}"],
        stdout=subprocess.PIPE, text=True,
    )

    def read() -> None:
        for line in watcher.stdout:
            lines.put((time.monotonic(), line.strip()))

    threading.Thread(target=read, daemon=True).start()
    return watcher


def watch_replicas(namespace: str, deployment: str, lines: "queue.Queue[tuple[float, str]]") -> subprocess.Popen:
    """`spec.replicas` of the Deployment."""
    return watch_field(namespace, "deployment", deployment, ".spec.replicas", lines)


def sync_calls(url: str) -> int:
    return metrics(url)["hook_calls"].get("sync", 0)


def scale(namespace: str, hello: str, replicas: int) -> None:
    subprocess.run(
        ["kubectl", "patch", "hello", hello, "-n", namespace, "--type", "merge",
         "-p", json.dumps({"spec": {"replicas": replicas}})],
        check=True, capture_output=True, timeout=60,
    )


def measure(args: argparse.Namespace) -> None:
    lines: "queue.Queue[tuple[float, str]]" = queue.Queue()
    watcher = watch_replicas(args.namespace, args.hello, lines)
    try:
        # The watch's first line is the Deployment as it is: not yet changed.
        _, first = lines.get(timeout=30)
        if first == str(args.replicas):
            raise SystemExit(f"restart_wait: {args.hello}'s Deployment already has {first} replicas")
        try:
            before = metrics(args.metrics)["hook_calls"].get("sync", 0)
        except OSError:
            before = 0  # not serving yet: the engine serves its own
        start = time.monotonic()
        engine = subprocess.Popen(args.engine, stdout=open(args.log, "w"), stderr=subprocess.STDOUT)
        ready = applied = None
        # (when, sync calls by then), sampled while waiting.
        samples: list[tuple[float, int]] = []
        deadline = start + args.timeout
        while applied is None and time.monotonic() < deadline:
            if engine.poll() is not None:
                raise SystemExit(f"restart_wait: the engine exited ({engine.returncode}); see {args.log}")
            if ready is None and args.ready and answers(args.ready):
                ready = time.monotonic()
            try:
                samples.append((time.monotonic(), metrics(args.metrics)["hook_calls"].get("sync", 0) - before))
            except OSError:
                pass  # the engine's own /metrics, not serving yet
            try:
                at, value = lines.get(timeout=0.02)
            except queue.Empty:
                continue
            if value == str(args.replicas):
                applied = at
        if applied is None:
            # Not left running past the bound (the script's cleanup knows
            # only the engines it started itself).
            engine.kill()
            raise SystemExit(f"restart_wait: no change within {args.timeout} s")
        # The change's own sync came between the last sample before it
        # landed and the first after.
        calls_before = max((n for t, n in samples if t <= applied), default=0)
        at_applied = metrics(args.metrics)
        calls = at_applied["hook_calls"].get("sync", 0) - before
        engine.send_signal(signal.SIGTERM)
        try:
            engine.wait(timeout=60)
        except subprocess.TimeoutExpired:
            engine.kill()
        json.dump(
            {
                "applied_seconds": round(applied - start, 3),
                "ready_seconds": None if ready is None else round(ready - start, 3),
                "after_ready_seconds": None if ready is None else round(applied - ready, 3),
                # Sampled every few tens of milliseconds: at least this
                # many went before the change's own, at most `by_then`.
                "sync_calls_before": calls_before,
                "sync_calls_by_then": calls,
                # The driver's client, just after: its requests by method
                # and the time they waited on the client budget.
                "requests_by_then": at_applied["requests"],
                "throttled_seconds_by_then": round(at_applied["throttled_seconds"], 3),
            },
            open(args.out, "w"),
            indent=1,
        )
    finally:
        watcher.terminate()


def dead(pid: int, within: float) -> bool:
    """Whether `pid` is gone or a zombie (its parent, the shell, reaps it
    later) within `within` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rpartition(")")[2].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.01)
    return False


def leader(args: argparse.Namespace) -> None:
    lines: "queue.Queue[tuple[float, str]]" = queue.Queue()
    holders: "queue.Queue[tuple[float, str]]" = queue.Queue()
    watcher = watch_replicas(args.namespace, args.hello, lines)
    lease = watch_field(args.namespace, "lease", args.lease, ".spec.holderIdentity", holders)
    try:
        _, first = lines.get(timeout=30)
        if first == str(args.replicas):
            raise SystemExit(f"restart_wait: {args.hello}'s Deployment already has {first} replicas")
        _, old = holders.get(timeout=30)
        if not old:
            raise SystemExit(f"restart_wait: nobody holds the Lease {args.lease}")
        before = sync_calls(args.metrics)
        os.kill(args.kill, signal.SIGKILL)
        death = time.monotonic()
        if not dead(args.kill, 5):
            raise SystemExit(f"restart_wait: {args.kill} still runs after SIGKILL")
        # The change is made while nobody leads: the standby takes the
        # Lease only after a whole term unrenewed.
        scale(args.namespace, args.hello, args.replicas)
        scaled = time.monotonic()
        takeover = ready = applied = None
        samples: list[tuple[float, int]] = []
        deadline = death + args.timeout
        while (applied is None or takeover is None) and time.monotonic() < deadline:
            if not os.path.exists(f"/proc/{args.standby}"):
                raise SystemExit("restart_wait: the standby exited")
            if ready is None and args.ready and answers(args.ready):
                ready = time.monotonic()
            try:
                samples.append((time.monotonic(), sync_calls(args.metrics) - before))
            except OSError:
                pass
            while takeover is None and not holders.empty():
                at, holder = holders.get()
                if holder and holder != old:
                    takeover = at
            try:
                at, value = lines.get(timeout=0.02)
            except queue.Empty:
                continue
            if value == str(args.replicas) and applied is None:
                applied = at
        if applied is None or takeover is None:
            raise SystemExit(f"restart_wait: no takeover and change within {args.timeout} s")
        calls_before = max((n for t, n in samples if t <= applied), default=0)
        at_applied = metrics(args.metrics)

        def since(t: float | None, origin: float | None = death) -> float | None:
            return None if t is None or origin is None else round(t - origin, 3)

        json.dump(
            {
                "old_holder": old,
                "scaled_seconds": since(scaled),
                "takeover_seconds": since(takeover),
                "ready_seconds": since(ready),
                "applied_seconds": since(applied),
                "after_takeover_seconds": since(applied, takeover),
                "after_ready_seconds": since(applied, ready),
                "sync_calls_before": calls_before,
                "sync_calls_by_then": at_applied["hook_calls"].get("sync", 0) - before,
                "requests_by_then": at_applied["requests"],
                "throttled_seconds_by_then": round(at_applied["throttled_seconds"], 3),
            },
            open(args.out, "w"),
            indent=1,
        )
    finally:
        watcher.terminate()
        lease.terminate()


def steady(args: argparse.Namespace) -> None:
    waits = []
    for hello in args.hellos:
        specs: "queue.Queue[tuple[float, str]]" = queue.Queue()
        lines: "queue.Queue[tuple[float, str]]" = queue.Queue()
        watchers = [
            watch_field(args.namespace, "hello", hello, ".spec.replicas", specs),
            watch_replicas(args.namespace, hello, lines),
        ]
        try:
            # Each watch's first line is its object as it is: the watch
            # then runs from that version, so no later event is missed.
            if specs.get(timeout=30)[1] == str(args.replicas) or lines.get(timeout=30)[1] == str(args.replicas):
                raise SystemExit(f"restart_wait: {hello} already has {args.replicas} replicas")
            scale(args.namespace, hello, args.replicas)
            changed = applied = None
            deadline = time.monotonic() + args.timeout
            while applied is None and time.monotonic() < deadline:
                try:
                    at, value = lines.get(timeout=0.05)
                except queue.Empty:
                    continue
                if value == str(args.replicas):
                    applied = at
            while changed is None and time.monotonic() < deadline:
                at, value = specs.get(timeout=max(0.01, deadline - time.monotonic()))
                if value == str(args.replicas):
                    changed = at
            if applied is None or changed is None:
                raise SystemExit(f"restart_wait: {hello}'s change not applied within {args.timeout} s")
            waits.append(round(applied - changed, 4))
        finally:
            for w in watchers:
                w.terminate()
        # Its status write and the Deployment's own settle before the next.
        time.sleep(args.gap)
    ranked = sorted(waits)

    def pct(p: int) -> float:
        # Nearest rank.
        return ranked[max(0, -(-len(ranked) * p // 100) - 1)]

    json.dump({"waits": waits, "p50": pct(50), "p90": pct(90)}, open(args.out, "w"), indent=1)


def quiet(args: argparse.Namespace) -> None:
    deadline = time.monotonic() + args.timeout
    last, since = None, time.monotonic()
    while time.monotonic() < deadline:
        m = metrics(args.metrics)
        calls = m["hook_calls"].get("sync", 0) - args.before
        # Not the requests: a leader renews its Lease every few seconds.
        key = (calls, m["reconciles"])
        if key != last or m["queue"] > 0 or calls < args.at_least:
            last, since = key, time.monotonic()
        elif time.monotonic() - since >= args.quiet:
            return
        time.sleep(0.5)
    raise SystemExit(f"restart_wait: not quiet within {args.timeout} s (last: {last})")


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    m = sub.add_parser("measure")
    m.add_argument("--namespace", required=True)
    m.add_argument("--hello", required=True)
    m.add_argument("--replicas", type=int, required=True)
    m.add_argument("--metrics", required=True)
    m.add_argument("--ready")
    m.add_argument("--timeout", type=float, default=1800)
    m.add_argument("--log", required=True)
    m.add_argument("--out", required=True)
    m.add_argument("engine", nargs="+")
    ld = sub.add_parser("leader")
    ld.add_argument("--namespace", required=True)
    ld.add_argument("--hello", required=True)
    ld.add_argument("--replicas", type=int, required=True)
    ld.add_argument("--lease", required=True)
    ld.add_argument("--kill", type=int, required=True)
    ld.add_argument("--standby", type=int, required=True)
    ld.add_argument("--metrics", required=True)
    ld.add_argument("--ready")
    ld.add_argument("--timeout", type=float, default=1800)
    ld.add_argument("--out", required=True)
    st = sub.add_parser("steady")
    st.add_argument("--namespace", required=True)
    st.add_argument("--replicas", type=int, required=True)
    st.add_argument("--timeout", type=float, default=120)
    st.add_argument("--gap", type=float, default=1.5)
    st.add_argument("--out", required=True)
    st.add_argument("hellos", nargs="+")
    q = sub.add_parser("quiet")
    q.add_argument("--metrics", required=True)
    q.add_argument("--at-least", type=int, default=0)
    q.add_argument("--before", type=int, default=0, help="sync calls counted before the engine started")
    q.add_argument("--quiet", type=float, default=5)
    q.add_argument("--timeout", type=float, default=600)
    args = parser.parse_args()
    {"measure": measure, "leader": leader, "steady": steady, "quiet": quiet}[args.command](args)


if __name__ == "__main__":
    main()
