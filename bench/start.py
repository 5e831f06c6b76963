#!/usr/bin/env python3
"""Starts a hook server and measures the time from exec to its first 200
on a real hook request (not just an open port).

    python3 bench/start.py PORT PATH BODYFILE -- COMMAND...

Prints `PID MILLISECONDS`; the server keeps running (its own session, output
to /dev/null). Exits non-zero if no 200 comes within 30 s.
"""
import socket
import subprocess
import sys
import time

port, path, body_file = int(sys.argv[1]), sys.argv[2], sys.argv[3]
command = sys.argv[sys.argv.index("--") + 1:]
body = open(body_file, "rb").read()
request = (
    "POST %s HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n"
    "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % (path, len(body))
).encode() + body

start = time.monotonic()
proc = subprocess.Popen(
    command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
)
while True:
    elapsed = time.monotonic() - start
    if elapsed > 30 or proc.poll() is not None:
        proc.kill()
        sys.exit("no 200 from %s within 30 s" % " ".join(command))
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(request)
            head = s.recv(64)
            if head.split(b" ")[1:2] == [b"200"]:
                break
    except (OSError, IndexError):
        pass
    time.sleep(0.0005)
print(proc.pid, round((time.monotonic() - start) * 1000, 1))
