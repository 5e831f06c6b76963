#!/usr/bin/env python3
"""Posts every Hello sync fixture to metahook and to each Python hook and
checks they answer alike, so the load test compares the same work.

Two differences are allowed: a `lastTransitionTime` that is "now" (each
server reads its own clock), and the wording of a serde error inside an
"Invalid Hello spec" message (the field path must still agree).

    python3 bench/same_answers.py RUST_PORT PYTHON_PORT...
"""
import glob
import http.client
import json
import os
import re
import sys

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def post(port, body):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("POST", "/hello/sync", body, {"Content-Type": "application/json"})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, json.loads(data)


def normalise(answer, request_text):
    for condition in answer.get("status", {}).get("conditions", []):
        if condition.get("lastTransitionTime") not in request_text:
            condition["lastTransitionTime"] = "<now>"
        message = condition.get("message", "")
        m = re.match(r"(Invalid Hello spec: spec[\w.]*): (invalid type|missing field|invalid value)", message)
        if m:
            condition["message"] = m.group(1) + ": <serde error>"
    return answer


ports = [int(p) for p in sys.argv[1:]]
failed = 0
for path in sorted(glob.glob(os.path.join(root, "fixtures/hello/*.json"))):
    if os.path.basename(path).startswith("finalize-"):
        continue
    text = open(path).read()
    body = json.dumps(json.loads(text), separators=(",", ":")).encode()
    answers = []
    for port in ports:
        status, answer = post(port, body)
        answers.append((port, status, normalise(answer, text)))
    reference = answers[0]
    for port, status, answer in answers[1:]:
        if (status, answer) != reference[1:]:
            failed += 1
            print("DIFFERENT on %s (port %d vs %d):\n  %s\n  %s" % (
                os.path.basename(path), reference[0], port,
                json.dumps(reference[2], sort_keys=True), json.dumps(answer, sort_keys=True)))
if failed:
    sys.exit("the Python hook does not answer as metahook does")
print("   every Hello sync fixture: the same answer from all %d servers" % len(ports))
