"""The hook service over HTTPS (hooks.tls): the certificates the chart
generates or has cert-manager issue, the pod serving them, and the
CompositeControllers telling Metacontroller how to verify the service
(caBundle) and who to be (clientTLS)."""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path

import helm_python
import pytest

from conftest import DEFAULT_NAMESPACE, Rendered, render
from test_chart import binary_env_names, openssl

TLS_DIR = "/etc/metahook/hooks-tls"
MTLS = {"hooks": {"tls": {"enabled": True, "clientAuth": True}}}
CERT_MANAGER_MTLS = {"hooks": {"tls": {"enabled": True, "clientAuth": True, "certManager": {"enabled": True}}}}


@pytest.fixture(scope="module")
def mtls(chart: helm_python.Chart) -> Rendered:
    return render(chart, MTLS)


def webhooks(out: Rendered) -> list[dict]:
    hooks = [hook["webhook"] for cc in out.all("CompositeController") for hook in cc["spec"]["hooks"].values()]
    assert hooks
    return hooks


def pem_files(out: Rendered, tmp_path: Path) -> dict[str, Path]:
    """The serving Secret's files, the client Secret's (client.*), and the
    CompositeControllers' caBundle, as PEM files."""
    files = {}
    serving = out.one("Secret", "metahook-hooks-tls")["data"]
    client = out.one("Secret", "metahook-hooks-client-tls")["data"]
    pems = {**{k: base64.b64decode(v) for k, v in serving.items()},
            **{f"client.{k}": base64.b64decode(v) for k, v in client.items()}}
    bundles = {hook["caBundle"]["inline"] for hook in webhooks(out)}
    assert len(bundles) == 1, "one CA for every webhook"
    pems["caBundle"] = bundles.pop().encode()
    for name, pem in pems.items():
        assert pem.startswith(b"-----BEGIN "), name
        files[name] = tmp_path / name
        files[name].write_bytes(pem)
    return files


def verify(ca: Path, cert: Path, purpose: str, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(["openssl", "verify", "-CAfile", str(ca), "-purpose", purpose, *extra, str(cert)],
                          capture_output=True, text=True)


def test_hooks_tls_is_off_by_default(chart: helm_python.Chart, default: Rendered) -> None:
    assert chart.values["hooks"]["tls"] == {
        "enabled": False, "clientAuth": False, "certValidityDays": 3650,
        "certManager": {"enabled": False, "issuerRef": {}, "duration": "8760h", "caDuration": "87600h"}}
    assert not default.all("Secret") and not default.all("Certificate")
    assert not {"METAHOOK_TLS_DIR", "METAHOOK_TLS_CLIENT_AUTH"} & set(default.env())
    assert "volumes" not in default.pod_spec
    assert "scheme" not in default.container["livenessProbe"]["httpGet"]
    for hook in webhooks(default):
        assert set(hook) == {"service", "path", "timeout"} or set(hook) == {"service", "path"}, hook
        assert "protocol" not in hook["service"]


def test_env_names_are_the_ones_the_binary_reads() -> None:
    assert {"METAHOOK_TLS_DIR", "METAHOOK_TLS_CLIENT_AUTH", "METAHOOK_AUTH_TOKEN_FILE"} <= binary_env_names()


def test_mutual_tls_pod_serves_the_mounted_certificate_and_probes_use_https(mtls: Rendered) -> None:
    env = mtls.env()
    assert env["METAHOOK_TLS_DIR"] == TLS_DIR
    assert env["METAHOOK_TLS_CLIENT_AUTH"] == "true"
    [mount] = [m for m in mtls.container["volumeMounts"] if m["name"] == "hooks-tls"]
    assert mount == {"name": "hooks-tls", "mountPath": TLS_DIR, "readOnly": True}
    [volume] = [v for v in mtls.pod_spec["volumes"] if v["name"] == "hooks-tls"]
    assert volume["secret"] == {"secretName": "metahook-hooks-tls", "defaultMode": 0o440}
    for probe in ("livenessProbe", "readinessProbe"):
        assert mtls.container[probe]["httpGet"]["scheme"] == "HTTPS", probe
    # The pod still gets no API token: the hooks read the mounted files.
    assert mtls.pod_spec["automountServiceAccountToken"] is False


def test_compositecontrollers_call_https_with_the_ca_and_a_client_certificate(mtls: Rendered) -> None:
    for hook in webhooks(mtls):
        assert hook["service"]["protocol"] == "https"
        assert hook["service"]["name"] == "metahook" and hook["service"]["namespace"] == DEFAULT_NAMESPACE
        assert set(hook["caBundle"]) == {"inline"}
        assert hook["clientTLS"] == {"secretRef": {"name": "metahook-hooks-client-tls",
                                                   "namespace": DEFAULT_NAMESPACE}}


def test_generated_certificates_chain_to_the_ca_bundle(mtls: Rendered, tmp_path: Path) -> None:
    """What Metacontroller checks (the service's certificate for the name it
    dials, <service>.<namespace>, under caBundle) and what the service checks
    (the client certificate under its ca.crt)."""
    pems = pem_files(mtls, tmp_path)
    assert pems["caBundle"].read_bytes() == pems["ca.crt"].read_bytes() == pems["client.ca.crt"].read_bytes()
    for name in ("metahook.metahook", "metahook.metahook.svc", "metahook.metahook.svc.cluster.local"):
        result = verify(pems["caBundle"], pems["tls.crt"], "sslserver", "-verify_hostname", name)
        assert result.returncode == 0, result.stderr
    assert verify(pems["caBundle"], pems["tls.crt"], "sslserver", "-verify_hostname",
                  "metahook.other").returncode != 0
    result = verify(pems["ca.crt"], pems["client.tls.crt"], "sslclient")
    assert result.returncode == 0, result.stderr
    # Not vacuous: a certificate is not its own CA.
    assert verify(pems["client.tls.crt"], pems["client.tls.crt"], "sslclient").returncode != 0
    for prefix in ("", "client."):
        assert (openssl("pkey", "-pubout", "-in", str(pems[f"{prefix}tls.key"]))
                == openssl("x509", "-noout", "-pubkey", "-in", str(pems[f"{prefix}tls.crt"])))


def test_one_ca_per_render_even_offline(chart: helm_python.Chart, mtls: Rendered) -> None:
    """Offline, `lookup` finds nothing and a new CA is made each render;
    within one render the Secrets and every CompositeController share it."""
    again = render(chart, MTLS)
    assert again.one("Secret", "metahook-hooks-tls")["data"]["ca.crt"] != \
        mtls.one("Secret", "metahook-hooks-tls")["data"]["ca.crt"]
    ca = base64.b64decode(again.one("Secret", "metahook-hooks-tls")["data"]["ca.crt"]).decode()
    assert {hook["caBundle"]["inline"] for hook in webhooks(again)} == {ca}


def test_tls_without_client_auth_has_no_client_certificate(chart: helm_python.Chart) -> None:
    out = render(chart, {"hooks": {"tls": {"enabled": True}}})
    assert [s["metadata"]["name"] for s in out.all("Secret")] == ["metahook-hooks-tls"]
    assert "METAHOOK_TLS_CLIENT_AUTH" not in out.env()
    for hook in webhooks(out):
        assert "clientTLS" not in hook and hook["service"]["protocol"] == "https"


def test_client_auth_needs_tls(chart: helm_python.Chart) -> None:
    with pytest.raises(Exception, match="enabled"):
        render(chart, {"hooks": {"tls": {"clientAuth": True}}})


def test_cert_manager_issues_both_certificates_from_a_stable_ca(chart: helm_python.Chart) -> None:
    out = render(chart, CERT_MANAGER_MTLS)
    assert not out.all("Secret"), "cert-manager writes the Secrets"
    certs = {c["metadata"]["name"]: c["spec"] for c in out.all("Certificate")}
    assert set(certs) == {"metahook-hooks-ca", "metahook-hooks-tls", "metahook-hooks-client-tls"}
    assert certs["metahook-hooks-ca"]["isCA"] is True
    assert certs["metahook-hooks-ca"]["issuerRef"]["name"] == "metahook-hooks-selfsigned"
    issuers = {i["metadata"]["name"]: i["spec"] for i in out.all("Issuer")}
    assert issuers == {"metahook-hooks-selfsigned": {"selfSigned": {}},
                       "metahook-hooks-ca": {"ca": {"secretName": "metahook-hooks-ca"}}}
    for name, usage in (("metahook-hooks-tls", "server auth"), ("metahook-hooks-client-tls", "client auth")):
        assert certs[name]["secretName"] == name
        assert certs[name]["issuerRef"] == {"name": "metahook-hooks-ca", "kind": "Issuer", "group": "cert-manager.io"}
        assert usage in certs[name]["usages"]
    assert certs["metahook-hooks-tls"]["dnsNames"] == [
        "metahook.metahook", "metahook.metahook.svc", "metahook.metahook.svc.cluster.local"]
    for hook in webhooks(out):
        assert hook["caBundle"] == {"secretRef": {"name": "metahook-hooks-tls", "namespace": DEFAULT_NAMESPACE,
                                                  "key": "ca.crt"}}
        assert hook["clientTLS"]["secretRef"]["name"] == "metahook-hooks-client-tls"


def test_cert_manager_with_an_issuer_of_the_users(chart: helm_python.Chart) -> None:
    out = render(chart, {"hooks": {"tls": {"enabled": True, "certManager": {
        "enabled": True, "issuerRef": {"name": "platform-ca", "kind": "ClusterIssuer"}}}}})
    assert not out.all("Issuer")
    [cert] = out.all("Certificate")
    assert cert["spec"]["issuerRef"] == {"name": "platform-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"}


def test_service_monitor_scrapes_https_with_the_ca(chart: helm_python.Chart) -> None:
    out = render(chart, {**MTLS, "metrics": {"serviceMonitor": {"enabled": True}}})
    [endpoint] = out.one("ServiceMonitor")["spec"]["endpoints"]
    assert endpoint["scheme"] == "https"
    assert endpoint["tlsConfig"] == {"serverName": "metahook.metahook.svc",
                                     "ca": {"secret": {"name": "metahook-hooks-tls", "key": "ca.crt"}}}
