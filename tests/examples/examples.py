"""Metacontroller's own examples (examples/*/test.sh in its v4.17.2 source
archive) as a test target, under the real Metacontroller and under
`metahook drive`. tests/examples/run.sh builds what it needs and calls

    examples.py run --engines metacontroller driver [-k EXAMPLE ...]

For each engine (the two side by side), a fresh stand-in control plane
(tests/cluster); for each example on it, one after another:

- the engine: Metacontroller started before the test (as if installed in
  the cluster); the driver started when the test installs its
  CompositeControllers, with them as its --controllers;
- the example's hook Deployment (namespace `metacontroller`) run on this
  machine instead of in a pod (`LocalKubelet`): its ConfigMap and Secret
  volumes written to a directory, its `sync.py` under python3, its
  `sync.js` under examples/nodejs/server.js with node, or its `.jsonnet`
  hooks under jsonnet-hooks (jsonnetd's contract), on loopback ports;
- the example's own test.sh, unchanged, with `kubectl` on its PATH being
  bin/kubectl: `kubectl apply|delete -k DIR` renders the kustomization and
  points each webhook `http://SERVICE.NAMESPACE/...` at the local server
  (`url: http://127.0.0.1:PORT/...`); an `https` webhook keeps its URL (the
  example's certificate names the Service): Metacontroller reaches it
  through a CONNECT proxy of ours (HTTPS_PROXY) that knows the Services,
  the driver (which takes no proxy) through a hosts file of its own naming
  a loopback address where a forwarder of ours listens.
- what the stand-in control plane lacks: the node-lifecycle controller
  (the stand-in Node's not-ready taint is lifted) and the pvc-protection
  controller (`LocalKubelet.release_pvcs`).

Each example ported to Rust (examples/NAME/ of this repository, the
binary metahook-example-NAME; the ports are the `NAME+rust` rows of
expected.txt) runs a second time as `NAME+rust`: the same
test.sh, with that binary (`serve`) standing in for the example's hook
Deployment, and each webhook URL's path as the binary serves it,
`/CONTROLLER/HOOK` (CONTROLLER: the CompositeController's name, which the
port's controller takes).

The examples in REAL_NODE (pods that must really run: indexedjob) run the
same way, beside the stand-in runs, on a real node of tests/cluster
instead, under one engine and then the other (one real node per machine);
the images they name are pulled from a registry of ours (NodeRegistry).

Then a Markdown table, example x engine, and the run fails when an example
does other than tests/examples/expected.txt says.
"""

import argparse
import base64
import concurrent.futures
import fcntl
import json
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import traceback
import urllib.parse
import urllib.request
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
ENGINES = ("metacontroller", "driver")
CONTROLLER_KINDS = ("CompositeController", "DecoratorController")
MC_CRDS = "manifests/production/metacontroller-crds-v1.yaml"
DRIVER_CRDS = "driver/crds/controllerrevisions.metacontroller.k8s.io.yaml"
SCENARIOS = HERE / "scenarios"
# Where the examples put their hook servers (Metacontroller's namespace).
HOOK_NAMESPACE = "metacontroller"
# Every kubectl call of ours ends within this many seconds.
KUBECTL_TIMEOUT = 60
# The finalizer kube-controller-manager's pvc-protection controller removes.
PVC_PROTECTION = "kubernetes.io/pvc-protection"
# SERVICE.NAMESPACE as a webhook URL names an in-cluster Service.
SERVICE_HOST = re.compile(r"^([a-z0-9-]+)\.([a-z0-9-]+)(?:\.svc(?:\.cluster\.local)?)?$")
# The examples whose pods must really run, and why: they run on a real node
# (tests/cluster/up.sh without --standin: the kubelet, containerd, runc),
# under one engine and then the other (one real node runs on a machine at a
# time), beside the stand-in runs; their images come from NodeRegistry.
REAL_NODE = {
    "indexedjob": "its busybox pods run to completion and test.sh reads one's output (kubectl logs)",
}
# The suffix of an example run with its Rust port's hooks (examples/NAME/).
RUST = "rust"
# Where the Rust ports are, one crate each: examples/NAME/Cargo.toml (not
# every crate there is one).
RUST_PORTS = ROOT / "examples"
# The port the image metacontroller/jsonnetd serves its hooks on.
JSONNETD_PORT = 8080
# This machine's end of the real node's link (tests/cluster/node_network.go,
# hostLinkIP): the node reaches this machine there, and nothing beyond it.
HOST_LINK_IP = "10.200.0.1"
# containerd's registry configuration directory on the real node, under the
# cluster's directory (tests/cluster/node_config.go, registryHosts).
NODE_REGISTRY_HOSTS = "node/containerd/certs.d"


def log(msg):
    print(f"examples: {msg}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tail(path, n):
    try:
        lines = Path(path).read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return []
    return lines[-n:]


# --- What the supervisor and the kubectl shim share: files in the state dir.


def service_port(state, key, allocate=True):
    """The loopback port standing for Service port `key`
    (`name.namespace:port`), allocated on first use by whichever side sees
    it first (the shim rewriting a URL, the kubelet starting the server)."""
    with open(state / "ports.lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        path = state / "ports.json"
        ports = json.loads(path.read_text()) if path.exists() else {}
        if key not in ports and allocate:
            ports[key] = free_port()
            path.write_text(json.dumps(ports))
        return ports.get(key)


def service_key(host, port):
    m = SERVICE_HOST.match(host or "")
    return f"{m[1]}.{m[2]}:{port}" if m else None


def rewrite_webhooks(doc, state, rust=False):
    """Each `http://SERVICE.NAMESPACE[:PORT]/PATH` webhook of a controller
    manifest, as `http://127.0.0.1:LOCAL/PATH`; with `rust`, as
    `http://127.0.0.1:LOCAL/CONTROLLER/HOOK`, where a Rust port's binary
    serves that hook (metahook serves each controller's hooks under its
    name)."""
    for kind, hook in ((doc.get("spec") or {}).get("hooks") or {}).items():
        webhook = (hook or {}).get("webhook") or {}
        url = webhook.get("url")
        if not url:
            continue
        u = urllib.parse.urlsplit(url)
        key = service_key(u.hostname, u.port or 80)
        # https keeps its name: the example's certificate is for the Service.
        if u.scheme != "http" or key is None:
            continue
        local = service_port(state, key)
        path = f"/{doc['metadata']['name']}/{kind}" if rust else u.path
        webhook["url"] = urllib.parse.urlunsplit(
            ("http", f"127.0.0.1:{local}", path, u.query, u.fragment)
        )


def cmd_kubectl(argv):
    """`kubectl apply|delete -k DIR ...` for a test.sh (bin/kubectl)."""
    kubectl = os.environ["EXAMPLES_KUBECTL"]
    state = Path(os.environ["EXAMPLES_STATE"])
    engine = os.environ["EXAMPLES_ENGINE"]
    rest, kdir, i = [], None, 0
    while i < len(argv):
        a = argv[i]
        if a in ("-k", "--kustomize"):
            kdir, i = argv[i + 1], i + 2
            continue
        if a.startswith(("-k=", "--kustomize=")):
            kdir = a.split("=", 1)[1]
        else:
            rest.append(a)
        i += 1
    verb = next((a for a in rest if not a.startswith("-")), "")
    if verb not in ("apply", "delete"):
        os.execv(kubectl, [kubectl, *argv])
    rendered = subprocess.run([kubectl, "kustomize", kdir], stdout=subprocess.PIPE, text=True)
    if rendered.returncode != 0:
        return rendered.returncode
    docs = [d for d in yaml.safe_load_all(rendered.stdout) if d]
    controllers = [d for d in docs if d.get("kind") in CONTROLLER_KINDS]
    for c in controllers:
        rewrite_webhooks(c, state, rust=os.environ.get("EXAMPLES_HOOKS") == RUST)
    # The driver reads its controllers from files: no Metacontroller CRDs
    # in its cluster, as for a user who moved off Metacontroller.
    objects = docs if engine == "metacontroller" else [d for d in docs if d not in controllers]
    rc = 0
    if objects:
        rc = subprocess.run(
            [kubectl, *rest, "-f", "-"], input=yaml.safe_dump_all(objects), text=True
        ).returncode
    if engine == "driver" and verb == "apply" and controllers and rc == 0:
        crds = [d["metadata"]["name"] for d in objects if d.get("kind") == "CustomResourceDefinition"]
        if crds:
            # The driver resolves its types at start-up: the CRDs must serve.
            subprocess.run(
                [kubectl, "wait", "--for", "condition=Established", "--timeout=60s"]
                + [f"crd/{n}" for n in crds],
                stdout=subprocess.DEVNULL,
            )
        start_driver(state, controllers)
    return rc


def start_driver(state, controllers):
    """Hands the controllers to the supervisor and waits (bounded) until it
    has (re)started the driver with them."""
    out = state / "controllers"
    out.mkdir(exist_ok=True)
    for c in controllers:
        (out / f"{c['metadata']['name']}.yaml").write_text(yaml.safe_dump(c))
    nonce = str(time.time_ns())
    (state / "driver-request").write_text(nonce)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        p = state / "driver-state"
        answer = p.read_text() if p.exists() else ""
        if answer.startswith(nonce + " "):
            print(f"examples: the driver {answer.split(' ', 1)[1]}", file=sys.stderr)
            return
        time.sleep(0.2)
    print("examples: the driver was not started within 120 s", file=sys.stderr)


# --- Running things on this machine.


class Procs:
    """Every process a run starts, each in its own session, stopped at the end."""

    def __init__(self):
        self.procs = []
        self.lock = threading.Lock()

    def start(self, argv, log_path, **kw):
        f = open(log_path, "ab")
        p = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             start_new_session=True, **kw)
        f.close()
        with self.lock:
            self.procs.append(p)
        return p

    @staticmethod
    def stop(p, grace=10):
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                p.wait(grace)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait(10)

    def stop_all(self):
        with self.lock:
            procs, self.procs = self.procs, []
        for p in reversed(procs):
            self.stop(p)


def wait_http(url, proc=None, seconds=60):
    """Until `url` answers 200 (True), `proc` exits or time is up (False)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return True
        except OSError:
            pass
        time.sleep(0.2)
    return False


class NotYet(Exception):
    """A volume's ConfigMap or Secret is not there yet: try again."""


class LocalKubelet(threading.Thread):
    """Runs the examples' hook Deployments (namespace `metacontroller`) on
    this machine, each once, as a pod would: the container's ConfigMap and
    Secret volumes written under its root directory, the Service's ports as
    loopback ports. Also stands in for the pvc-protection controller."""

    def __init__(self, kubectl, kubeconfig, state, src, procs, bins, rust_hooks=None):
        super().__init__(daemon=True)
        self.kubectl, self.state, self.src, self.procs = kubectl, state, src, procs
        self.bins = bins
        # A Rust port's binary: it serves the hooks instead of any example's server.
        self.rust_hooks = rust_hooks
        self.env = dict(os.environ, KUBECONFIG=kubeconfig)
        self.stopping = threading.Event()
        self.started, self.errors = {}, []

    def run(self):
        while not self.stopping.wait(1):
            try:
                self.release_pvcs()
                self.start_pods()
            except subprocess.TimeoutExpired as e:
                log(f"kubectl did not answer within {e.timeout} s; trying again")

    def start_pods(self):
        out = subprocess.run(
            [self.kubectl, "get", "deployments,services,configmaps,secrets", "-n", HOOK_NAMESPACE, "-o", "json"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=self.env, timeout=KUBECTL_TIMEOUT,
        )
        if out.returncode != 0:
            return
        by_kind = {}
        for o in json.loads(out.stdout)["items"]:
            by_kind.setdefault(o["kind"], {})[o["metadata"]["name"]] = o
        for name, dep in by_kind.get("Deployment", {}).items():
            if name in self.started:
                continue
            try:
                self.started[name] = self.run_pod(dep, by_kind)
                log(f"hook server {name} started: {self.started[name]}")
            except NotYet:
                pass
            except Exception as e:  # reported with the result, the loop goes on
                self.started[name] = None
                self.errors.append(f"{name}: {e}")
                log(f"hook server {name} cannot run: {e}")

    def release_pvcs(self):
        """What kube-controller-manager's pvc-protection controller does,
        which tests/cluster does not run: a deleted PVC no pod uses loses
        its kubernetes.io/pvc-protection finalizer (catset's test.sh deletes
        its PVCs and waits for them to go)."""
        out = subprocess.run([self.kubectl, "get", "pods,persistentvolumeclaims", "-A", "-o", "json"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=self.env,
                             timeout=KUBECTL_TIMEOUT)
        if out.returncode != 0:
            return
        items = json.loads(out.stdout)["items"]
        used = {(o["metadata"]["namespace"], v["persistentVolumeClaim"]["claimName"])
                for o in items if o["kind"] == "Pod"
                for v in o["spec"].get("volumes") or [] if "persistentVolumeClaim" in v}
        for o in items:
            meta = o["metadata"]
            finalizers = meta.get("finalizers") or []
            if (o["kind"] != "PersistentVolumeClaim" or "deletionTimestamp" not in meta
                    or PVC_PROTECTION not in finalizers or (meta["namespace"], meta["name"]) in used):
                continue
            keep = [f for f in finalizers if f != PVC_PROTECTION]
            subprocess.run([self.kubectl, "patch", "pvc", meta["name"], "-n", meta["namespace"], "--type=merge",
                            "-p", json.dumps({"metadata": {"finalizers": keep or None}})],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=self.env, timeout=KUBECTL_TIMEOUT)

    def run_pod(self, dep, by_kind):
        name = dep["metadata"]["name"]
        pod = dep["spec"]["template"]
        (container,) = pod["spec"]["containers"]
        root = self.state / "pods" / name
        volumes = {v["name"]: v for v in pod["spec"].get("volumes") or []}
        mounts = []
        for m in container.get("volumeMounts") or []:
            v = volumes[m["name"]]
            files = {}
            if "configMap" in v:
                cm = by_kind.get("ConfigMap", {}).get(v["configMap"]["name"])
                if cm is None:
                    raise NotYet
                files = {k: s.encode() for k, s in (cm.get("data") or {}).items()}
                files.update({k: base64.b64decode(s) for k, s in (cm.get("binaryData") or {}).items()})
            elif "secret" in v:
                secret = by_kind.get("Secret", {}).get(v["secret"]["secretName"])
                if secret is None:
                    raise NotYet
                files = {k: base64.b64decode(s) for k, s in (secret.get("data") or {}).items()}
            else:
                raise ValueError(f"volume {m['name']}: only configMap and secret volumes run here")
            target = root / m["mountPath"].lstrip("/")
            target.mkdir(parents=True, exist_ok=True)
            for k, data in files.items():
                (target / k).write_bytes(data)
            mounts.append(m["mountPath"])
        # The Services that select this pod: their ports, as ours.
        labels = pod["metadata"].get("labels") or {}
        ports = {}
        for svc in by_kind.get("Service", {}).values():
            sel = svc["spec"].get("selector") or {}
            if sel and all(labels.get(k) == val for k, val in sel.items()):
                for p in svc["spec"]["ports"]:
                    local = service_port(self.state, f"{svc['metadata']['name']}.{HOOK_NAMESPACE}:{p['port']}")
                    ports[int(p.get("targetPort", p["port"]))] = local
        env = dict(os.environ, EXAMPLES_PORTS=json.dumps(ports), EXAMPLES_ROOT=str(root),
                   EXAMPLES_MOUNTS=json.dumps(mounts))
        image = container["image"]
        command = (container.get("command") or []) + (container.get("args") or [])
        if self.rust_hooks is not None:
            # The Rust port serves every hook of its controller on one port.
            if len(set(ports.values())) != 1:
                raise ValueError(f"the Rust hooks listen on one port; the Services give {ports}")
            (local,) = set(ports.values())
            cwd = root
            cwd.mkdir(parents=True, exist_ok=True)
            argv = [self.rust_hooks, "serve", "--listen", f"127.0.0.1:{local}"]
        elif image.startswith("python:") and command[:1] in (["python"], ["python3"]):
            argv = ["python3", str(HERE / "python_hook.py"), str(root) + command[1], *command[2:]]
            cwd = root
        elif image.startswith("metacontroller/nodejs-server:"):
            # That image: examples/nodejs/server.js in /node, its WORKDIR
            # (examples/nodejs/Dockerfile); the hooks mounted in /node/hooks.
            cwd = root / "node"
            cwd.mkdir(parents=True, exist_ok=True)
            shutil.copy(self.src / "nodejs" / "server.js", cwd / "server.js")
            argv = ["node", "--require", str(HERE / "listen.js"), str(cwd / "server.js")]
        elif image.startswith("metacontroller/jsonnetd:"):
            # Not jsonnetd (not on the Go module proxy here): our server of
            # its contract (jsonnet-hooks/main.go), in the container's
            # workingDir, where the hooks' ConfigMap is mounted.
            if JSONNETD_PORT not in ports:
                raise ValueError(f"no Service port for jsonnetd's {JSONNETD_PORT}")
            cwd = root / container["workingDir"].lstrip("/")
            argv = [self.bins["jsonnet-hooks"], "--listen", f"127.0.0.1:{ports[JSONNETD_PORT]}"]
        else:
            raise ValueError(f"image {image} ({command}): no way to run it on this machine")
        self.procs.start(argv, self.state / f"hook-{name}.log", cwd=cwd, env=env)
        return f"{' '.join(argv[:2])} ... on {ports}"


def relay(a, b):
    """Bytes both ways until either side closes, or a minute without one."""
    a.settimeout(None)
    socks = [a, b]
    while True:
        readable, _, _ = select.select(socks, [], [], 60)
        if not readable:
            return
        for s in readable:
            try:
                data = s.recv(65536)
                if not data:
                    return
                (b if s is a else a).sendall(data)
            except OSError:
                # One side reset or closed mid-write (Metacontroller ends
                # a tunnel as it likes): the tunnel is over, not the run.
                return


def connect_service(state, key):
    """A connection to the local server standing for Service port `key`."""
    local = service_port(state, key, allocate=False) if key else None
    try:
        return socket.create_connection(("127.0.0.1", local), timeout=10) if local else None
    except OSError:
        return None


class Listener(threading.Thread):
    """Accepts on `address` until stopped, each connection to `handle` in a
    thread of its own."""

    def __init__(self, state, address):
        super().__init__(daemon=True)
        self.state = state
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(address)
        self.sock.listen(16)
        self.sock.settimeout(0.5)
        self.port = self.sock.getsockname()[1]
        self.stopping = threading.Event()

    def run(self):
        while not self.stopping.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            threading.Thread(target=self.handle, args=(conn,), daemon=True).start()

    def stop(self):
        self.stopping.set()
        self.sock.close()


class ConnectProxy(Listener):
    """An HTTP CONNECT proxy for Metacontroller's HTTPS_PROXY: a tunnel to
    SERVICE.NAMESPACE:PORT goes to the local server standing for that
    Service, so an https webhook keeps the name its certificate is for."""

    def __init__(self, state):
        super().__init__(state, ("127.0.0.1", 0))

    def handle(self, conn):
        with conn:
            conn.settimeout(10)
            head = b""
            while b"\r\n\r\n" not in head and len(head) < 65536:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                head += chunk
            parts = head.split(b"\r\n", 1)[0].decode(errors="replace").split()
            if len(parts) < 2 or parts[0] != "CONNECT":
                conn.sendall(b"HTTP/1.1 405 Method Not Allowed\r\n\r\n")
                return
            host, _, port = parts[1].rpartition(":")
            upstream = connect_service(self.state, service_key(host, port))
            if upstream is None:
                conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\n\r\n")
                return
            with upstream:
                conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                relay(conn, upstream)


class Forwarder(Listener):
    """The driver takes no proxy: it resolves an https webhook's Service
    name itself, through a hosts file of its own, to `ip`, where this
    forwards each connection to the local server standing for `key`."""

    def __init__(self, state, ip, port, key):
        super().__init__(state, (ip, port))
        self.key = key

    def handle(self, conn):
        with conn:
            upstream = connect_service(self.state, self.key)
            if upstream is not None:
                with upstream:
                    relay(conn, upstream)


def https_services(controllers):
    """(host, port) of each https webhook whose host names a Service, in the
    controller manifests under `controllers` (their URLs left as written)."""
    found = set()
    for f in sorted(controllers.glob("*.yaml")):
        doc = yaml.safe_load(f.read_text()) or {}
        for hook in ((doc.get("spec") or {}).get("hooks") or {}).values():
            url = ((hook or {}).get("webhook") or {}).get("url")
            u = urllib.parse.urlsplit(url or "")
            if u.scheme == "https" and SERVICE_HOST.match(u.hostname or ""):
                found.add((u.hostname, u.port or 443))
    return sorted(found)


# --- One example under one engine.


class Engine:
    def __init__(self, name, bins, state, procs, kubeconfig, proxy_port):
        self.name, self.bins, self.state, self.procs = name, bins, state, procs
        self.kubeconfig, self.proxy_port = kubeconfig, proxy_port
        self.proc, self.ready = None, False
        self.handled = None
        self.refusal = None
        self.forwarders = []

    def log_path(self):
        return self.state / f"{self.name}.log"

    def start_metacontroller(self):
        health = free_port()
        env = dict(os.environ, KUBECONFIG=self.kubeconfig,
                   HTTPS_PROXY=f"http://127.0.0.1:{self.proxy_port}", NO_PROXY="127.0.0.1,localhost")
        argv = ["metacontroller", "--discovery-interval=5s", "--metrics-address=127.0.0.1:0",
                f"--health-probe-bind-address=127.0.0.1:{health}",
                # Its default 5 QPS would only slow the examples down.
                "--client-go-qps=100", "--client-go-burst=200"]
        self.proc = self.procs.start(argv, self.log_path(), executable=self.bins["metacontroller"], env=env)
        if not wait_http(f"http://127.0.0.1:{health}/readyz", self.proc):
            raise RuntimeError("Metacontroller did not become ready: " + " / ".join(tail(self.log_path(), 5)))
        self.ready = True

    def resolving(self, services, argv):
        """`argv` in a mount namespace of its own where /etc/hosts also
        names each Service, at an address of 127.77.0.0/24 a Forwarder
        listens on: this machine's /etc/hosts is left alone."""
        lines = [Path("/etc/hosts").read_text().rstrip("\n")]
        for i, (host, port) in enumerate(services, 1):
            ip = f"127.77.0.{i}"
            forwarder = Forwarder(self.state, ip, port, service_key(host, port))
            forwarder.start()
            self.forwarders.append(forwarder)
            lines.append(f"{ip} {host}")
        hosts = self.state / "hosts"
        hosts.write_text("\n".join(lines) + "\n")
        return ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                'mount --bind "$0" /etc/hosts && exec "$@"', str(hosts), *argv]

    def stop_forwarders(self):
        for f in self.forwarders:
            f.stop()
        self.forwarders = []

    def poll_driver_request(self):
        """(Re)starts the driver when the shim asks; returns the refusal
        message if it exits before it is ready."""
        p = self.state / "driver-request"
        nonce = p.read_text() if p.exists() else None
        if not nonce or nonce == self.handled:
            return None
        self.handled = nonce
        if self.proc is not None:
            Procs.stop(self.proc)
        self.stop_forwarders()
        listen = free_port()
        argv = [self.bins["metahook"], "drive", "--controllers", str(self.state / "controllers"),
                "--listen", f"127.0.0.1:{listen}"]
        services = https_services(self.state / "controllers")
        if services:
            argv = self.resolving(services, argv)
        self.proc = self.procs.start(argv, self.log_path(), env=dict(os.environ, KUBECONFIG=self.kubeconfig))
        self.ready = wait_http(f"http://127.0.0.1:{listen}/readyz", self.proc)
        if self.ready:
            answer = "is ready"
        elif self.proc.poll() is not None:
            errors = [line for line in tail(self.log_path(), 20) if "error" in line.lower()]
            self.refusal = (errors or tail(self.log_path(), 1) or ["(no output)"])[-1]
            answer = f"exited at start-up: {self.refusal}"
        else:
            answer = "was not ready within 60 s"
        (self.state / "driver-state").write_text(f"{nonce} {answer}")
        return self.refusal


def sweep_hook_namespace(kubectl, kubeconfig):
    """Deletes a hook Deployment (and its Service, ConfigMaps, Secrets) a
    test.sh did not remove (its cleanup timed out), so that the next example
    does not start its server again; returns their names."""
    env = dict(os.environ, KUBECONFIG=kubeconfig)
    # kube-root-ca.crt is the control plane's, republished when deleted.
    out = subprocess.run(
        [kubectl, "get", "deployments,services,configmaps,secrets", "-n", HOOK_NAMESPACE, "-o", "name",
         "--field-selector", "metadata.name!=kube-root-ca.crt"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env, timeout=KUBECTL_TIMEOUT,
    ).stdout.split()
    if out:
        subprocess.run([kubectl, "delete", "-n", HOOK_NAMESPACE, "--wait=false", *out], env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=KUBECTL_TIMEOUT)
    return out


def engine_says(path, text):
    """The first line of the engine's log holding `text`, if any."""
    try:
        with open(path, errors="replace") as f:
            return next((line.strip() for line in f if text in line), None)
    except FileNotFoundError:
        return None


def run_example(name, engine, src, work, bins, kubeconfig, kubectl, timeout, known_failure=None):
    """One example under one engine. `known_failure`: text whose appearance
    in the engine's log (or the test's own) ends the example at once as
    failed (expected.txt's `fails`), rather than after the whole timeout."""
    state = work / f"{engine}-{name}"
    # A second attempt (harness_retry) keeps the first one's logs.
    tries = 1
    while state.exists():
        tries += 1
        state = work / f"{engine}-{name}.{tries}"
    state.mkdir(parents=True)
    example, _, variant = name.partition("+")
    rust_hooks = rust_binary(bins, example) if variant == RUST else None
    procs = Procs()
    proxy = ConnectProxy(state)
    proxy.start()
    kubelet = LocalKubelet(kubectl, kubeconfig, state, src, procs, bins, rust_hooks)
    kubelet.start()
    eng = Engine(engine, bins, state, procs, kubeconfig, proxy.port)
    start = time.monotonic()
    outcome, detail = None, ""
    test_log = state / "test.log"
    try:
        if engine == "metacontroller":
            eng.start_metacontroller()
        env = dict(os.environ, KUBECONFIG=kubeconfig, EXAMPLES_KUBECTL=kubectl, EXAMPLES_STATE=str(state),
                   EXAMPLES_ENGINE=engine, EXAMPLES_PYTHON=sys.executable, EXAMPLES_HELPER=str(Path(__file__).resolve()),
                   EXAMPLES_HOOKS=RUST if rust_hooks else "original",
                   PATH=f"{HERE / 'bin'}:{Path(kubectl).parent}:{os.environ['PATH']}")
        # test.sh v1: as Metacontroller's own examples/test.sh runs each
        # (also with a Rust port's hooks); a scenario of ours in its
        # example's directory.
        scenario = variant and variant != RUST
        argv = ["bash", str(SCENARIOS / f"{name}.sh")] if scenario else ["bash", "./test.sh", "v1"]
        test = procs.start(argv, test_log, cwd=src / example, env=env)
        deadline = start + timeout
        while test.poll() is None:
            if time.monotonic() > deadline:
                outcome, detail = "fail", f"timed out after {timeout} s"
                break
            if engine == "driver" and eng.poll_driver_request():
                outcome, detail = "refused", eng.refusal
                break
            if eng.ready and eng.proc.poll() is not None:
                outcome, detail = "fail", f"{engine} exited: " + " / ".join(tail(eng.log_path(), 3))
                break
            said = known_failure and eng.ready and (engine_says(eng.log_path(), known_failure)
                                                    or engine_says(test_log, known_failure))
            if said:
                # The words that matter, with a little of what led to them.
                at = said.index(known_failure)
                outcome, detail = "fail", f"{engine} log: ...{said[max(0, at - 160):at + len(known_failure) + 80]}"
                break
            time.sleep(0.2)
        if test.poll() is None:
            # Its EXIT trap deletes what it made; bounded, then killed.
            Procs.stop(test, grace=60)
        elif outcome is None:
            outcome = "pass" if test.returncode == 0 else "fail"
            if outcome == "fail":
                detail = f"test.sh exited {test.returncode}"
                # The known words may come with the test's own exit.
                said = known_failure and engine_says(test_log, known_failure)
                if said:
                    detail += f": {said}"
        if kubelet.errors and outcome != "pass":
            detail += "; hook server: " + "; ".join(kubelet.errors)
    except RuntimeError as e:
        outcome, detail = "fail", str(e)
    finally:
        kubelet.stopping.set()
        procs.stop_all()
        proxy.stop()
        eng.stop_forwarders()
        kubelet.join(10)
        try:
            leftovers = sweep_hook_namespace(kubectl, kubeconfig)
        except subprocess.TimeoutExpired:
            leftovers = ["(kubectl did not answer)"]
        if leftovers:
            log(f"{engine}: {name}: its test.sh left {leftovers} in {HOOK_NAMESPACE}; deleted")
    return {
        "example": name, "engine": engine, "outcome": outcome, "detail": detail,
        "seconds": round(time.monotonic() - start, 1), "state": str(state),
        "tail": tail(test_log, 40), "engine_tail": tail(eng.log_path(), 40),
    }


def rust_binary(bins, example):
    """The binary of `example`'s Rust port (tests/examples/run.sh builds it)."""
    path = Path(bins["rust-hooks"]) / f"metahook-example-{example}"
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"no Rust hooks at {path}: tests/examples/run.sh builds them")
    return str(path)


def harness_error(name, engine, e):
    """The result of an example the harness itself failed on (a kubectl that
    did not answer, a control plane that did not start): an `error`, which
    no expectation meets, with the exception and where it was raised, so
    that the summary says what broke rather than a bare traceback."""
    ours = [f for f in traceback.extract_tb(e.__traceback__) if f.filename == __file__]
    where = (ours or traceback.extract_tb(e.__traceback__))[-1]
    detail = f"the harness failed: {type(e).__name__}: {e} (examples.py:{where.lineno}, {where.name})"
    log(f"{engine}: {name}: {detail}\n" + "".join(traceback.format_exception(e)))
    return error_result(name, engine, detail)


def harness_retry(engine, what, attempt):
    """`attempt()`, and once more if the harness itself failed in it (an
    exception, never an example's own failure, which is a result): these
    machines are shared, and a kubectl that did not answer in time says
    nothing of the engine. Said loudly; the second failure is raised."""
    try:
        return attempt()
    except Exception as e:  # any harness failure gets its one retry
        log(f"{engine}: {what}: the harness failed ({type(e).__name__}: {e}); trying once more\n"
            + "".join(traceback.format_exception(e)))
    return attempt()


def error_result(name, engine, detail):
    return {"example": name, "engine": engine, "outcome": "error", "detail": detail, "seconds": 0.0,
            "state": "", "tail": [], "engine_tail": []}


# --- Expectations and the table.


def load_expected(path):
    expected = {}
    for n, line in enumerate(Path(path).read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        fields = line.split(None, 3)
        if len(fields) < 3 or fields[2] not in ("pass", "refused", "fails", "cannot-run"):
            sys.exit(f"{path}:{n}: EXAMPLE ENGINE pass|refused|fails|cannot-run [DETAIL]: {line!r}")
        example, engine, expect = fields[:3]
        detail = fields[3] if len(fields) > 3 else ""
        if expect != "pass" and not detail:
            sys.exit(f"{path}:{n}: {expect} needs its detail")
        for e in ENGINES if engine == "*" else [engine]:
            if e not in ENGINES or (example, e) in expected:
                sys.exit(f"{path}:{n}: engine {e!r} unknown or given twice for {example}")
            expected[(example, e)] = (expect, detail)
    return expected


def meets(result, expect, detail):
    if expect == "pass":
        return result["outcome"] == "pass"
    if expect == "refused":
        return result["outcome"] == "refused" and detail in (result["detail"] or "")
    if expect == "fails":
        return result["outcome"] == "fail" and detail in (result["detail"] or "")
    return False


def cell(result, expect, detail):
    if result is None:
        return f"cannot run here: {detail}" if expect == "cannot-run" else "not run"
    o = result["outcome"]
    if o == "pass":
        text = f"pass ({result['seconds']:.0f} s)"
    elif o == "refused":
        # The message after the manifest's path (which names our temp dir).
        text = f"refused at start-up: {result['detail'].split('.yaml: ', 1)[-1]}"
    elif expect == "fails" and meets(result, expect, detail):
        text = f"fails, known: {detail}"
    elif o == "error":
        text = f"**error** ({result['detail']})"
    else:
        last = " / ".join(line.strip() for line in result["tail"][-3:])
        text = f"**fail** ({result['detail']}): {last}"
    if not meets(result, expect, detail):
        text += f" — **expected {expect}**"
    return text.replace("|", "\\|")


def report(examples, engines, expected, results):
    by = {(r["example"], r["engine"]): r for r in results}
    print("| example | " + " | ".join(engines) + " |")
    print("|---|" + "---|" * len(engines))
    for ex in examples:
        name = f"{ex} (real node)" if ex in REAL_NODE else ex
        print(f"| {name} | " + " | ".join(cell(by.get((ex, e)), *expected[(ex, e)]) for e in engines) + " |")
    wrong = [r for r in results if not meets(r, *expected[(r["example"], r["engine"])])]
    return wrong


# --- The whole run.


class NodeRegistry:
    """The registry the real node pulls the examples' images from: the
    reference registry (Distribution, Debian's docker-registry package,
    unpacked by scripts/debian-package.sh, not installed) on this machine's
    end of the node's link, holding each image under its Docker Hub name
    (tests/examples/busybox-image.sh pushes busybox), and the node's
    containerd told to ask it first for docker.io's images: a hosts.toml
    in containerd's registry configuration directory, read at each pull,
    as an air-gapped cluster's mirror is configured. Loading the image into
    containerd is not enough: `image: busybox` is the tag `latest`, whose
    default imagePullPolicy is Always, and the kubelet pulls such an image
    at every container start even when containerd holds it (with no
    registry: `failed to resolve image ... registry-1.docker.io ... network
    is unreachable`, ErrImagePull)."""

    def __init__(self, cluster_dir, log_path, procs):
        self.cluster_dir, self.log_path, self.procs = cluster_dir, log_path, procs

    def start(self):
        unpacked = subprocess.run([str(ROOT / "scripts/debian-package.sh"), "docker-registry"],
                                  stdout=subprocess.PIPE, text=True, check=True).stdout.strip()
        with socket.socket() as s:
            s.bind((HOST_LINK_IP, 0))
            address = f"{HOST_LINK_IP}:{s.getsockname()[1]}"
        data = self.cluster_dir / "registry"
        data.mkdir(parents=True, exist_ok=True)
        config = data / "config.yml"
        config.write_text(yaml.safe_dump({
            "version": 0.1,
            "storage": {"filesystem": {"rootdirectory": str(data / "storage")}},
            "http": {"addr": address},
        }))
        proc = self.procs.start([f"{unpacked}/usr/bin/docker-registry", "serve", str(config)], self.log_path)
        if not wait_http(f"http://{address}/v2/", proc):
            raise RuntimeError(f"the registry did not answer on {address}: " + " / ".join(tail(self.log_path, 3)))
        subprocess.run([str(HERE / "busybox-image.sh"), address], check=True, stdout=subprocess.DEVNULL)
        hosts = self.cluster_dir / NODE_REGISTRY_HOSTS / "docker.io" / "hosts.toml"
        hosts.parent.mkdir(parents=True, exist_ok=True)
        hosts.write_text(f'server = "https://registry-1.docker.io"\n\n'
                         f'[host."http://{address}"]\n  capabilities = ["pull", "resolve"]\n')
        log(f"registry on {address} for the node's docker.io pulls")


def cluster_up(cluster_dir, node):
    subprocess.run([str(ROOT / "tests/cluster/down.sh"), "--wipe", str(cluster_dir)], check=True)
    flags = ["--standin"] if node == "standin" else []
    out = subprocess.run([str(ROOT / "tests/cluster/up.sh"), *flags, str(cluster_dir)],
                         stdout=subprocess.PIPE, text=True, check=True).stdout
    env = {}
    for line in out.splitlines():
        if line.startswith("export ") and "=" in line:
            k, v = line[len("export "):].split("=", 1)
            env[k] = v
    return env


def cmd_run(args):
    work = Path(args.work)
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    expected = load_expected(HERE / "expected.txt")
    tmp = tempfile.TemporaryDirectory(prefix="metahook-examples-")
    with tarfile.open(args.archive) as tar:
        tar.extractall(tmp.name, filter="tar")
    srcroot = Path(tmp.name)
    src = srcroot / "examples"
    examples = sorted(p.parent.name for p in src.glob("*/test.sh"))
    # Our own scenarios on an example's controller (EXAMPLE+WHAT.sh).
    # The Rust ports: expected.txt's EXAMPLE+rust rows, each a crate in examples/EXAMPLE/.
    ported = sorted({ex.partition("+")[0] for ex, _ in expected if ex.endswith(f"+{RUST}")})
    examples = sorted(examples + [p.stem for p in SCENARIOS.glob("*+*.sh") if p.stem.split("+")[0] in examples]
                      + [f"{ex}+{RUST}" for ex in ported if ex in examples])
    unported = [ex for ex in ported if not (RUST_PORTS / ex / "Cargo.toml").is_file()]
    missing = [f"{ex} ({e})" for ex in examples for e in ENGINES if (ex, e) not in expected]
    unknown = sorted({ex for ex, _ in expected} - set(examples))
    unknown += sorted(set(REAL_NODE) - set(examples)) + [f"{ex}+{RUST} (no crate examples/{ex}/)" for ex in unported]
    if missing or unknown:
        sys.exit(f"tests/examples/expected.txt: no expectation for {missing}; not in the archive: {unknown}")
    selected = args.k or examples
    bad = sorted(set(selected) - set(examples))
    if bad:
        sys.exit(f"no such example in the archive: {bad} (there are {examples})")
    kubectl = str(ROOT / "target/cluster/bin/kubectl")

    def node_of(ex):
        return "real" if ex in REAL_NODE else "standin"

    def run_on(engine, node, keep):
        """The examples to run under `engine` on `node` (a stand-in or a real
        one), on a fresh control plane of their own."""
        to_run = [ex for ex in selected if expected[(ex, engine)][0] != "cannot-run" and node_of(ex) == node]
        results, began = [], time.monotonic()
        if not to_run:
            return results, 0
        cluster_dir = ROOT / "target/cluster" / (f"examples-{engine}" + ("-node" if node == "real" else ""))
        procs = Procs()

        def prepare():
            """A fresh control plane, ready for the examples; its kubeconfig."""
            kubeconfig = cluster_up(cluster_dir, node)["KUBECONFIG"]
            k = dict(os.environ, KUBECONFIG=kubeconfig)
            # Where the examples put their hook servers, Metacontroller's namespace.
            subprocess.run([kubectl, "create", "namespace", HOOK_NAMESPACE], env=k, check=True,
                           stdout=subprocess.DEVNULL, timeout=KUBECTL_TIMEOUT)
            # The node-lifecycle controller lifts this taint from a Ready node;
            # the stand-in runs none, and the DaemonSet controller schedules
            # nothing onto a node that has it (daemonjob's DaemonSet).
            if node == "standin":
                subprocess.run([kubectl, "taint", "nodes", "--all", "node.kubernetes.io/not-ready:NoSchedule-"],
                               env=k, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=KUBECTL_TIMEOUT)
            else:
                NodeRegistry(cluster_dir, work / f"registry-{engine}.log", procs).start()
            # Each engine's own CRDs, as a user installs them: Metacontroller's
            # manifests, or the driver's own (driver/crds/: its ControllerRevisions).
            crds = srcroot / MC_CRDS if engine == "metacontroller" else ROOT / DRIVER_CRDS
            subprocess.run([kubectl, "apply", "--server-side", "-f", str(crds)], env=k,
                           check=True, stdout=subprocess.DEVNULL, timeout=KUBECTL_TIMEOUT)
            subprocess.run([kubectl, "wait", "--for", "condition=Established", "--timeout=60s", "crd", "--all"],
                           env=k, check=True, stdout=subprocess.DEVNULL, timeout=KUBECTL_TIMEOUT + 10)
            return kubeconfig

        def run_one(ex, kubeconfig):
            expect, detail = expected[(ex, engine)]
            return run_example(ex, engine, src, work, args.bins, kubeconfig, kubectl, args.timeout,
                               known_failure=detail if expect == "fails" else None)

        try:
            kubeconfig = harness_retry(engine, f"{node} control plane", prepare)
            for ex in to_run:
                log(f"{engine}: {ex} ({node} node) ...")
                try:
                    r = harness_retry(engine, ex, lambda: run_one(ex, kubeconfig))
                except Exception as e:  # the harness's own failure, reported as this example's
                    r = harness_error(ex, engine, e)
                log(f"{engine}: {ex}: {r['outcome']} ({r['seconds']} s) {r['detail']}")
                results.append(r)
        except Exception as e:  # the control plane or its setup: what is left cannot run
            ran = {r["example"] for r in results}
            left = [ex for ex in to_run if ex not in ran]
            failed = harness_error(left[0] if left else f"{node} control plane", engine, e)
            results += [dict(failed, example=ex) for ex in left]
        finally:
            procs.stop_all()
            if node == "real" and any(r["outcome"] != "pass" for r in results):
                # The kubelet's and containerd's side of it, before --wipe.
                shutil.copytree(cluster_dir / "logs", work / f"node-{engine}-logs", dirs_exist_ok=True)
                log(f"{engine}: the real node's logs are in {work / f'node-{engine}-logs'}")
            if keep:
                log(f"left running: {cluster_dir} (tests/cluster/down.sh --wipe {cluster_dir})")
            else:
                subprocess.run([str(ROOT / "tests/cluster/down.sh"), "--wipe", str(cluster_dir)])
        return results, time.monotonic() - began

    def on_real_nodes():
        """The real-node examples, one engine after the other: one real node
        runs on a machine at a time. --keep-cluster keeps the last."""
        return {e: run_on(e, "real", args.keep_cluster and e == args.engines[-1]) for e in args.engines}

    # The engines side by side, each on its own stand-in control plane, and
    # beside them the real-node examples: the examples mostly wait
    # (update-strategy sleeps 70 s), so the step takes about as long as the
    # longest of the three.
    began = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=1 if args.serial else len(args.engines) + 1) as pool:
        standin = {e: pool.submit(run_on, e, "standin", args.keep_cluster) for e in args.engines}
        real = pool.submit(on_real_nodes)
        done = {(e, "standin"): f.result() for e, f in standin.items()}
        done.update({(e, "real"): r for e, r in real.result().items()})
    results = [r for e in args.engines for node in ("standin", "real") for r in done[(e, node)][0]]
    # An example the harness never reached is a failure, not a gap in the table.
    ran = {(r["example"], r["engine"]) for r in results}
    results += [error_result(ex, e, "not run: its engine's run ended before it")
                for e in args.engines for ex in selected
                if expected[(ex, e)][0] != "cannot-run" and (ex, e) not in ran]
    (work / "results.json").write_text(json.dumps(results, indent=1))
    print()
    wrong = report(selected, args.engines, expected, results)
    print()
    for engine in args.engines:
        spent = [f"{done[(engine, node)][1]:.0f} s on {node}" for node in ("standin", "real")
                 if done[(engine, node)][0]]
        print(f"{engine}: " + (", ".join(spent) or "nothing run") + " (control plane, every example, stopping)")
    print(f"in all: {time.monotonic() - began:.0f} s"
          + (" (one after the other)" if args.serial else " (the engines side by side, the real node beside them)"))
    for r in results:
        if r["outcome"] != "pass" and r in wrong:
            print(f"\n--- {r['example']} under {r['engine']}: {r['outcome']} ({r['detail']}); logs in {r['state']}")
            print("\n".join(["test.sh (last lines):"] + r["tail"]))
            print("\n".join([f"{r['engine']} (last lines):"] + r["engine_tail"]))
    if wrong:
        print(f"\nexamples: {len(wrong)} not as tests/examples/expected.txt says: "
              + ", ".join(f"{r['example']} ({r['engine']})" for r in wrong))
        return 1
    print("examples: every example did what tests/examples/expected.txt says")
    return 0


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "kubectl":
        return cmd_kubectl(sys.argv[2:])
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run")
    run.add_argument("--engines", nargs="+", choices=ENGINES, default=list(ENGINES))
    run.add_argument("-k", action="append", help="only this example (repeatable)")
    run.add_argument("--archive", required=True)
    run.add_argument("--metacontroller")
    run.add_argument("--metahook", required=True)
    run.add_argument("--jsonnet-hooks", required=True, help="the jsonnet hook server (jsonnet-hooks/build.sh)")
    run.add_argument("--rust-hooks", required=True,
                     help="the directory of the Rust ports' binaries, metahook-example-NAME (run.sh builds them)")
    run.add_argument("--work", default=str(ROOT / "target/examples"))
    run.add_argument("--timeout", type=int, default=240, help="seconds per example")
    run.add_argument("--keep-cluster", action="store_true")
    run.add_argument("--serial", action="store_true", help="one engine after the other")
    args = ap.parse_args()
    args.bins = {"metacontroller": args.metacontroller, "metahook": args.metahook,
                 "jsonnet-hooks": args.jsonnet_hooks, "rust-hooks": args.rust_hooks}
    return cmd_run(args)


if __name__ == "__main__":
    sys.exit(main())
