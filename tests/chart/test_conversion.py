"""The CRDs of more than one version (conversion/<crd>.yaml, Foo's v1alpha1
and v1): templated, not in crds/, so that their conversion webhook names the
release's Service and an upgrade brings a new version. With hooks.tls every
version is served and converted by the release's Service with the hooks' CA;
without, only the stored version; kept on uninstall unless told otherwise.
The API server's side is in test_admission.py's cluster test (both modes)."""

from __future__ import annotations

import base64

import helm_python
import pytest

from conftest import DEFAULT_NAMESPACE, Rendered, conversion_files, crd_files, load_yaml_documents, render

TLS = {"hooks": {"tls": {"enabled": True}}}
FOOS = "foos.samplecontroller.k8s.io"


def test_a_crd_of_more_than_one_version_is_templated_not_in_crds() -> None:
    converted = [p.name for p in conversion_files()]
    assert converted == [f"{FOOS}.yaml"]
    assert f"{FOOS}.yaml" not in [p.name for p in crd_files()]
    [crd] = load_yaml_documents(conversion_files()[0].read_text())
    assert [(v["name"], v["served"], v["storage"]) for v in crd["spec"]["versions"]] == [
        ("v1alpha1", True, True), ("v1", True, False)]


def test_without_tls_only_the_stored_version_is_served(chart: helm_python.Chart, default: Rendered) -> None:
    assert chart.values["conversion"] == {"installCRDs": True, "keepCRDs": True}
    crd = default.one("CustomResourceDefinition", FOOS)
    assert [v["name"] for v in crd["spec"]["versions"]] == ["v1alpha1"]
    assert crd["spec"]["conversion"] == {"strategy": "None"}
    assert crd["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    assert crd["metadata"]["annotations"]["api-approved.kubernetes.io"].startswith("unapproved")
    assert crd["metadata"]["labels"]["app.kubernetes.io/instance"] == "metahook"
    # No webhook to reach: the NetworkPolicy lets no one else in.
    rules = default.one("NetworkPolicy")["spec"]["ingress"]
    assert {"ports": [{"port": "http", "protocol": "TCP"}]} not in rules


def test_with_tls_every_version_is_converted_by_the_release_service(chart: helm_python.Chart) -> None:
    out = render(chart, TLS)
    crd = out.one("CustomResourceDefinition", FOOS)
    assert [v["name"] for v in crd["spec"]["versions"]] == ["v1alpha1", "v1"]
    webhook = crd["spec"]["conversion"]["webhook"]
    assert crd["spec"]["conversion"]["strategy"] == "Webhook"
    assert webhook["conversionReviewVersions"] == ["v1"]
    assert webhook["clientConfig"]["service"] == {
        "name": "metahook", "namespace": DEFAULT_NAMESPACE, "port": 80, "path": "/foo/convert"}
    secret = out.one("Secret", "metahook-hooks-tls")["data"]
    assert webhook["clientConfig"]["caBundle"] == secret["ca.crt"]
    assert base64.b64decode(webhook["clientConfig"]["caBundle"]).startswith(b"-----BEGIN CERTIFICATE")
    assert {"ports": [{"port": "http", "protocol": "TCP"}]} in out.one("NetworkPolicy")["spec"]["ingress"]


def test_cert_manager_injects_the_ca_and_the_release_names_the_service(chart: helm_python.Chart) -> None:
    out = render(chart, {"hooks": {"tls": {"enabled": True, "certManager": {"enabled": True}}},
                         "fullnameOverride": "ops", "commonAnnotations": {"team": "platform"}},
                 namespace="platform")
    crd = out.one("CustomResourceDefinition", FOOS)
    assert crd["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == "platform/ops-hooks-tls"
    assert crd["metadata"]["annotations"]["team"] == "platform"
    config = crd["spec"]["conversion"]["webhook"]["clientConfig"]
    assert "caBundle" not in config
    assert config["service"] == {"name": "ops", "namespace": "platform", "port": 80, "path": "/foo/convert"}


@pytest.mark.parametrize("values, present", [
    ({"conversion": {"installCRDs": False, "keepCRDs": True}}, False),
    ({"conversion": {"installCRDs": True, "keepCRDs": False}}, True),
])
def test_the_values_choose_whether_the_release_installs_and_keeps_them(
        chart: helm_python.Chart, values: dict, present: bool) -> None:
    out = render(chart, {**TLS, **values})
    crds = out.all("CustomResourceDefinition")
    assert bool(crds) == present
    if present:
        assert "helm.sh/resource-policy" not in crds[0]["metadata"].get("annotations", {})
