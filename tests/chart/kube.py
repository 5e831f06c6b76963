"""A small Kubernetes REST client for the cluster tests (test_install.py):
the standard library's HTTPS with a client certificate (the admin
kubeconfig tests/cluster/up.sh writes) or a bearer token (a ServiceAccount's,
from the TokenRequest API). Every call returns the status code and the
decoded body, so a test can assert a 403 as exactly that.
"""

from __future__ import annotations

import base64
import json
import ssl
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, TypeVar

import yaml

T = TypeVar("T")

# Far above what any step needs; only a broken chart or driver reaches it.
DEADLINE_SECONDS = 120.0


@dataclass
class Reply:
    status: int
    body: Any

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300


class ApiError(AssertionError):
    pass


class Kube:
    """One identity on one API server."""

    def __init__(self, server: str, ca_pem: bytes, *, token: str | None = None,
                 cert_pem: bytes | None = None, key_pem: bytes | None = None) -> None:
        self.server = server.rstrip("/")
        self.ca_pem = ca_pem
        self.token = token
        self._ssl = ssl.create_default_context(cadata=ca_pem.decode())
        if cert_pem is not None:
            # ssl loads a client certificate from files only.
            with tempfile.TemporaryDirectory() as tmp:
                cert, key = Path(tmp) / "client.crt", Path(tmp) / "client.key"
                cert.write_bytes(cert_pem)
                key.write_bytes(key_pem or b"")
                self._ssl.load_cert_chain(cert, key)

    @classmethod
    def from_kubeconfig(cls, path: Path) -> "Kube":
        config = yaml.safe_load(Path(path).read_text())
        contexts = {c["name"]: c["context"] for c in config["contexts"]}
        context = contexts[config["current-context"]]
        cluster = {c["name"]: c["cluster"] for c in config["clusters"]}[context["cluster"]]
        user = {u["name"]: u["user"] for u in config["users"]}[context["user"]]
        return cls(
            cluster["server"],
            base64.b64decode(cluster["certificate-authority-data"]),
            token=user.get("token"),
            cert_pem=base64.b64decode(user["client-certificate-data"]) if "client-certificate-data" in user else None,
            key_pem=base64.b64decode(user["client-key-data"]) if "client-key-data" in user else None,
        )

    def with_token(self, token: str) -> "Kube":
        """The same API server, as whoever `token` names."""
        return Kube(self.server, self.ca_pem, token=token)

    def kubeconfig(self, user: str, namespace: str = "default") -> str:
        """A kubeconfig for this client's token (what `metahook` reads)."""
        assert self.token, "only a token client can be written as a kubeconfig"
        return yaml.safe_dump({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "cluster", "cluster": {
                "server": self.server,
                "certificate-authority-data": base64.b64encode(self.ca_pem).decode()}}],
            "users": [{"name": user, "user": {"token": self.token}}],
            "contexts": [{"name": "ctx", "context": {"cluster": "cluster", "user": user, "namespace": namespace}}],
            "current-context": "ctx",
        })

    def call(self, method: str, path: str, body: Any = None, *, query: dict[str, str] | None = None,
             content_type: str = "application/json") -> Reply:
        url = self.server + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, method=method)
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", content_type)
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, context=self._ssl, timeout=30) as response:
                status, text = response.status, response.read()
        except urllib.error.HTTPError as error:
            status, text = error.code, error.read()
        try:
            decoded = json.loads(text) if text else None
        except json.JSONDecodeError:
            decoded = text.decode(errors="replace")
        return Reply(status, decoded)

    def ok(self, method: str, path: str, body: Any = None, **kwargs: Any) -> Any:
        """The body of a call that must succeed."""
        reply = self.call(method, path, body, **kwargs)
        if not reply.ok:
            raise ApiError(f"{method} {path}: {reply.status} {reply.body}")
        return reply.body

    def get(self, path: str) -> Any | None:
        """The object at `path`, or None when it does not exist."""
        reply = self.call("GET", path)
        if reply.status == 404:
            return None
        if not reply.ok:
            raise ApiError(f"GET {path}: {reply.status} {reply.body}")
        return reply.body

    def items(self, path: str, **query: str) -> list[dict]:
        return self.ok("GET", path, query=query or None)["items"]

    def create(self, path: str, body: dict) -> dict:
        return self.ok("POST", path, body)

    def delete(self, path: str) -> None:
        reply = self.call("DELETE", path)
        if not reply.ok and reply.status != 404:
            raise ApiError(f"DELETE {path}: {reply.status} {reply.body}")


def wait_for(what: str, check: Callable[[], T | None], deadline: float = DEADLINE_SECONDS) -> T:
    """Polls `check` until it returns something other than None (or False),
    or fails naming `what`. Waits for an outcome; measures nothing."""
    end = time.monotonic() + deadline
    while True:
        value = check()
        if value is not None and value is not False:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.25)
