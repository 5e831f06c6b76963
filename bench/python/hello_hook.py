#!/usr/bin/env python3
"""The Hello sync hook in Python, written the way Metacontroller's examples
write hooks: http.server's HTTPServer + BaseHTTPRequestHandler, json,
HTTP/1.0 (one request per connection), request logging left on.

The logic is seeds/src/hello.rs's sync, line for line: the same desired
Deployment, the same status and conditions (bench/load.sh checks the two
answer the fixtures alike before measuring). It is the baseline metahook is
compared with, so it is kept as plain as the examples on purpose.

    python3 bench/python/hello_hook.py PORT
"""
from http.server import BaseHTTPRequestHandler, HTTPServer
import json
import sys
import time

DEFAULT_IMAGE = "nginxdemos/hello:0.3-plain-text"
MAX_REPLICAS = 20
MAX_NAME_LEN = 63


def labels(name):
    return {
        "app.kubernetes.io/managed-by": "metahook",
        "app.kubernetes.io/name": name,
        "operator.fraim.co.jp/managed-by": "metahook",
    }


def deployment(parent, replicas, image):
    name = parent["metadata"]["name"]
    metadata = {"labels": labels(name), "name": name}
    if parent["metadata"].get("namespace") is not None:
        metadata["namespace"] = parent["metadata"]["namespace"]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata,
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels(name)},
            "template": {
                "metadata": {"labels": labels(name)},
                "spec": {
                    "containers": [
                        {
                            "image": image,
                            "name": "hello",
                            "ports": [{"containerPort": 80, "name": "http", "protocol": "TCP"}],
                        }
                    ]
                },
            },
        },
    }


def is_int32(v):
    return isinstance(v, int) and not isinstance(v, bool) and -(2**31) <= v < 2**31


def valid_spec(parent):
    spec = parent.get("spec")
    if spec is None:
        spec = {}
    if not isinstance(spec, dict):
        return None, "spec: invalid type: expected struct HelloSpec"
    if "replicas" not in spec:
        return None, "spec: missing field `replicas`"
    if not is_int32(spec["replicas"]):
        return None, "spec.replicas: invalid type: expected i32"
    image = spec.get("image", DEFAULT_IMAGE)
    if not isinstance(image, str):
        return None, "spec.image: invalid type: expected a string"
    replicas = spec["replicas"]
    problems = []
    if replicas > MAX_REPLICAS:
        problems.append("spec.replicas: greater than %d" % MAX_REPLICAS)
    if replicas < 0:
        problems.append("spec.replicas: less than 0")
    if image == "":
        problems.append("spec.image: must not be empty")
    elif any(c.isspace() for c in image):
        problems.append("spec.image: must not contain whitespace")
    if len(parent["metadata"]["name"].encode()) > MAX_NAME_LEN:
        problems.append(
            "metadata.name: longer than %d characters, too long for a label value" % MAX_NAME_LEN
        )
    if problems:
        return None, "; ".join(problems)
    return {"replicas": replicas, "image": image}, None


def deployments(children):
    for objects in children.values():
        for child in objects.values():
            if child.get("kind") == "Deployment" and child.get("apiVersion") == "apps/v1":
                yield child


def counts(observed):
    status = (observed or {}).get("status") or {}
    return {
        "replicas": status.get("replicas", 0),
        "readyReplicas": status.get("readyReplicas", 0),
        "availableReplicas": status.get("availableReplicas", 0),
        "updatedReplicas": status.get("updatedReplicas", 0),
    }


def ready_condition(observed, want):
    c = counts(observed)
    if c["replicas"] > want:
        return ("Ready", False, "ScalingDown", "%d replicas running, %d wanted" % (c["replicas"], want))
    message = "%d/%d replicas available" % (c["availableReplicas"], want)
    if c["availableReplicas"] >= want and c["readyReplicas"] >= want and c["updatedReplicas"] >= want:
        return ("Ready", True, "ReplicasAvailable", message)
    return ("Ready", False, "ReplicasNotAvailable", message)


def conditions(parent, wanted):
    previous = ((parent.get("status") or {}).get("conditions")) or []
    generation = parent["metadata"].get("generation")
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    out = []
    for type_, ok, reason, message in wanted:
        status = "True" if ok else "False"
        since = now
        for p in previous:
            if p.get("type") == type_ and p.get("status") == status:
                since = p.get("lastTransitionTime")
                break
        condition = {"lastTransitionTime": since, "message": message}
        if generation is not None:
            condition["observedGeneration"] = generation
        condition.update({"reason": reason, "status": status, "type": type_})
        out.append(condition)
    return out


def sync(parent, children):
    name = parent["metadata"]["name"]
    owned = list(deployments(children))
    observed = next((d for d in owned if d["metadata"]["name"] == name), None)
    spec, why = valid_spec(parent)
    if spec is not None:
        desired = [deployment(parent, spec["replicas"], spec["image"])]
        target = spec["replicas"]
        valid = ("SpecValid", True, "Valid", "the spec is valid")
    else:
        desired = []
        for d in owned:
            containers = d.get("spec", {}).get("template", {}).get("spec", {}).get("containers") or [{}]
            held = deployment(
                parent,
                d.get("spec", {}).get("replicas", 1),
                containers[0].get("image") or DEFAULT_IMAGE,
            )
            held["metadata"]["name"] = d["metadata"]["name"]
            desired.append(held)
        target = observed.get("spec", {}).get("replicas", 1) if observed else None
        valid = ("SpecValid", False, "InvalidSpec", "Invalid Hello spec: " + why)
    if target is None:
        ready = ("Ready", False, "InvalidSpec", "no Deployment is created while the spec is invalid")
    else:
        ready = ready_condition(observed, target)
    c = counts(observed)
    status = {
        "replicas": c["replicas"],
        "readyReplicas": c["readyReplicas"],
        "availableReplicas": c["availableReplicas"],
        "conditions": conditions(parent, [ready, valid]),
    }
    return {"status": status, "children": desired}


class Controller(BaseHTTPRequestHandler):
    def do_POST(self):
        observed = json.loads(self.rfile.read(int(self.headers.get("content-length"))))
        desired = sync(observed["parent"], observed["children"])
        self.send_response(200)
        self.send_header("Content-type", "application/json")
        self.end_headers()
        self.wfile.write(json.dumps(desired).encode())


if __name__ == "__main__":
    HTTPServer(("127.0.0.1", int(sys.argv[1])), Controller).serve_forever()
