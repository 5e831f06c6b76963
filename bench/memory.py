#!/usr/bin/env python3
"""Many slow senders of big hook requests against one metahook, on loopback,
while its RSS, its bytes-buffered gauge and /healthz are watched.

    python3 bench/memory.py PID PORT BODYFILE CONNECTIONS
    python3 bench/memory.py hostile PID PORT BODYFILE CONNECTIONS

The second form sends CONNECTIONS copies of a hostile body at once, whole,
and reports their statuses, the process's peak RSS (VmHWM) and /healthz.

Each connection sends (to HOOK, default /hello/sync) the whole body (Content-Length declared) in pieces of
CHUNK bytes with PAUSE seconds between them, and reads the answer as soon as
one comes (a refusal comes before the body is sent). Like Metacontroller, a
connection refused with 429 waits Retry-After seconds and tries again, up to
ATTEMPTS times. Every loop is bounded: ATTEMPTS per connection, the pieces of
one body, DEADLINE seconds for the whole run.

Prints one JSON object with what happened; exits 0 whatever happened (the
shell script judges).
"""
import json
import os
import re
import select
import socket
import sys
import threading
import time

def hostile_row(result, hook, place, shape, size, workers, limit):
    """A Markdown row for a hostile run and whether it met the acceptance.
    The stated bound (docs/robustness.md, "Hostile shapes"): idle + the
    bodies held + per worker K x body + C, with K = 3 and C = 16 MiB for
    Hikawa, 8 MiB for the others."""
    r = json.loads(result)
    size, workers, limit = int(size), int(workers), int(limit)
    mib = lambda kib: kib / 1024
    c = 16 if hook.startswith("hikawa") else 8
    bound = mib(r["rss_idle_kib"]) + workers * size / 2**20 + workers * (3 * size / 2**20 + c)
    codes = r["statuses"]
    ok = (len(codes) == workers and all(s == "200" or s.startswith("4") for s in codes)
          and r["healthz_failed"] == 0 and mib(r["rss_peak_kib"]) < limit and mib(r["rss_peak_kib"]) <= bound)
    print(f'| {hook} | {place} | {shape} | {size / 2**20:.0f} MiB | {", ".join(codes)} | '
          f'{mib(r["rss_idle_kib"]):.0f} / **{mib(r["rss_peak_kib"]):.0f}** MiB | {bound:.0f} MiB | '
          f'{r["healthz_ok"]}/{r["healthz_ok"] + r["healthz_failed"]} (slowest {r["healthz_max_ms"]:.0f} ms) |')
    print("ok" if ok else "not met")


if sys.argv[1] == "row":
    hostile_row(*sys.argv[2:9])
    sys.exit(0)
HOSTILE = sys.argv[1] == "hostile"
if HOSTILE:
    sys.argv.pop(1)
pid, port, body_file, connections = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
CHUNK = int(os.environ.get("CHUNK", 64 * 1024))
PAUSE = float(os.environ.get("PAUSE", 0.002))
ATTEMPTS = int(os.environ.get("ATTEMPTS", 200))
DEADLINE = float(os.environ.get("DEADLINE", 600))
HOOK = os.environ.get("HOOK", "/hello/sync")
HOST = "127.0.0.1"

body = memoryview(open(body_file, "rb").read())
head = (
    "POST %s HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n"
    "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % (HOOK, len(body))
).encode()
start = time.monotonic()
stop = threading.Event()
lock = threading.Lock()
stats = {
    "ok": 0,  # 200 with a hook response
    "refused": 0,  # 429 with Retry-After
    "refused_without_retry_after": 0,
    "refused_reasons": {},
    "other": {},  # any other outcome, by status or error
    "served_connections": 0,  # connections that got their 200
    "max_sent_before_refusal": 0,  # bytes of body sent before a 429 came
    "healthz_ok": 0,
    "healthz_failed": 0,
    "healthz_max_ms": 0.0,
    "rss_peak_kib": 0,
    "buffered_peak": 0,
}


def bump(key, sub=None, n=1):
    with lock:
        if sub is None:
            stats[key] += n
        else:
            stats[key][sub] = stats[key].get(sub, 0) + n


def read_response(sock):
    """The status, headers and body of one response, or None if the
    connection ended without one."""
    raw = b""
    for _ in range(100_000):  # bounded; each recv waits at most 30 s
        end = raw.find(b"\r\n\r\n")
        if end >= 0:
            lines = raw[:end].decode("latin-1").split("\r\n")
            status = int(lines[0].split(" ")[1])
            headers = {k.strip().lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:] if ":" in l)}
            length = int(headers.get("content-length", "0"))
            if len(raw) >= end + 4 + length:
                return status, headers, raw[end + 4:end + 4 + length]
        try:
            data = sock.recv(65536)
        except OSError:
            data = b""
        if not data:
            return None
        raw += data
    return None


def attempt():
    """One request: returns (status, headers, body, bytes of body sent)."""
    with socket.create_connection((HOST, port), timeout=30) as sock:
        sock.sendall(head)
        sent = 0
        while sent < len(body):  # bounded by the body's length
            readable, _, _ = select.select([sock], [], [], 0)
            if readable:
                break  # answered early: a refusal
            try:
                sock.sendall(body[sent:sent + CHUNK])
            except OSError:
                break  # the server closed after refusing
            sent = min(sent + CHUNK, len(body))
            if sent < len(body):
                time.sleep(PAUSE)
        answer = read_response(sock)
        if answer is None:
            return None, {}, b"", sent
        return answer + (sent,)


def connection():
    for _ in range(ATTEMPTS):
        if stop.is_set() or time.monotonic() - start > DEADLINE:
            bump("other", "gave up (deadline)")
            return
        try:
            status, headers, answer, sent = attempt()
        except OSError as e:
            bump("other", type(e).__name__)
            return
        if status == 200:
            reply = json.loads(answer)
            if "status" in reply and "children" in reply:
                bump("ok")
                bump("served_connections")
            else:
                bump("other", "200 without a hook response")
            return
        if status == 429:
            retry = headers.get("retry-after", "")
            reason = json.loads(answer).get("reason", "?") if answer else "?"
            bump("refused_reasons", reason)
            with lock:
                stats["max_sent_before_refusal"] = max(stats["max_sent_before_refusal"], sent)
            if not re.fullmatch(r"[0-9]+", retry) or int(retry) < 1:
                bump("refused_without_retry_after")
                time.sleep(1)
            else:
                bump("refused")
                time.sleep(int(retry))
            continue
        bump("other", str(status))
        return
    bump("other", "gave up (attempts)")


def rss_kib():
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def sample_rss():
    while not stop.wait(0.05):
        now = rss_kib()
        with lock:
            stats["rss_peak_kib"] = max(stats["rss_peak_kib"], now)


def get(path):
    with socket.create_connection((HOST, port), timeout=2) as sock:
        sock.sendall(("GET %s HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n" % path).encode())
        return read_response(sock)


def probe_health():
    # As the kubelet would, more often: a 2 s timeout, every 100 ms.
    while not stop.wait(0.1):
        t = time.monotonic()
        try:
            answer = get("/healthz")
            ok = answer is not None and answer[0] == 200
        except OSError:
            ok = False
        ms = (time.monotonic() - t) * 1000
        with lock:
            stats["healthz_ok" if ok else "healthz_failed"] += 1
            stats["healthz_max_ms"] = max(stats["healthz_max_ms"], round(ms, 1))


def sample_buffered():
    while not stop.wait(0.2):
        try:
            answer = get("/metrics")
        except OSError:
            continue
        if answer is None:
            continue
        m = re.search(rb"^metahook_hook_request_bytes_buffered (\d+)", answer[2], re.M)
        if m:
            with lock:
                stats["buffered_peak"] = max(stats["buffered_peak"], int(m.group(1)))


def hostile():
    """Every connection at once, the whole body each; one answer each."""
    statuses = []

    def one():
        try:
            with socket.create_connection((HOST, port), timeout=120) as sock:
                sock.sendall(head)
                try:
                    sock.sendall(body)
                except OSError:
                    pass  # refused before the end of the body
                answer = read_response(sock)
            statuses.append(str(answer[0]) if answer else "closed")
        except OSError as e:
            statuses.append(type(e).__name__)

    threads = [threading.Thread(target=one) for _ in range(connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(180)
    return statuses


def peak_kib():
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


stats["rss_idle_kib"] = rss_kib()
if HOSTILE:
    watcher = threading.Thread(target=probe_health, daemon=True)
    watcher.start()
    stats["statuses"] = sorted(hostile())
    time.sleep(0.3)
    stop.set()
    watcher.join(5)
    stats["rss_peak_kib"] = peak_kib()
    keys = ("statuses", "rss_idle_kib", "rss_peak_kib", "healthz_ok", "healthz_failed", "healthz_max_ms")
    print(json.dumps({k: stats[k] for k in keys}))
    sys.exit(0)
watchers = [threading.Thread(target=f, daemon=True) for f in (sample_rss, probe_health, sample_buffered)]
for w in watchers:
    w.start()
clients = [threading.Thread(target=connection, daemon=True) for _ in range(connections)]
for c in clients:
    c.start()
for c in clients:
    c.join(max(1.0, DEADLINE + 60 - (time.monotonic() - start)))
stats["seconds"] = round(time.monotonic() - start, 1)
time.sleep(1)
stop.set()
for w in watchers:
    w.join(5)
stats["rss_after_kib"] = rss_kib()
print(json.dumps(stats))
