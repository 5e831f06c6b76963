"""What a change made while no engine ran waits for (bench/restart-wait.sh).

    restart_wait.py measure --namespace NS --hello NAME --replicas R
        --metrics URL [--ready URL] --timeout S --out JSON -- ENGINE...

Watches the Hello's Deployment (`kubectl get --watch`), starts ENGINE (the
driver, or Metacontroller), and records from that start: when `--ready`
first answers 200 (the driver's /readyz: its caches synced), when the
Deployment first carries `spec.replicas` R, and how many hook calls
(`sync`) the engine had made by then, from `--metrics` (the driver's own,
or `metahook serve`'s beside Metacontroller, less what it counted before). Then stops ENGINE (SIGTERM)
and writes the figures as JSON.
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


def watch_replicas(namespace: str, deployment: str, lines: "queue.Queue[tuple[float, str]]") -> subprocess.Popen:
    """`spec.replicas` of the Deployment, each value as the API server
    sends it, with the time it arrived."""
    watcher = subprocess.Popen(
        ["kubectl", "get", "deployment", deployment, "-n", namespace, "--watch",
         "-o", "jsonpath={.spec.replicas}{\"\\n\"}"],
        stdout=subprocess.PIPE, text=True,
    )

    def read() -> None:
        for line in watcher.stdout:
            lines.put((time.monotonic(), line.strip()))

    threading.Thread(target=read, daemon=True).start()
    return watcher


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
    args = parser.parse_args()
    measure(args)


if __name__ == "__main__":
    main()
