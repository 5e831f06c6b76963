"""Admission webhooks (admission.enabled): the controllers' validate hooks
registered with the API server — one ValidatingWebhookConfiguration per
controller with a validate hook (admission/<controller>.yaml), at this
release's Service over HTTPS, its CA the hooks' own, the release's
namespace left out, and a NetworkPolicy that lets the API server in."""

from __future__ import annotations

import base64

import helm_python
import pytest

from conftest import DEFAULT_NAMESPACE, Rendered, render

ADMISSION = {"hooks": {"tls": {"enabled": True}}, "admission": {"enabled": True}}


@pytest.fixture(scope="module")
def admission(chart: helm_python.Chart) -> Rendered:
    return render(chart, ADMISSION)


def test_admission_is_off_by_default(chart: helm_python.Chart, default: Rendered) -> None:
    assert chart.values["admission"] == {"enabled": False, "failurePolicy": "Fail", "timeoutSeconds": 5}
    assert not default.all("ValidatingWebhookConfiguration")
    assert not default.all("MutatingWebhookConfiguration")


def test_without_tls_it_refuses_to_render(chart: helm_python.Chart) -> None:
    with pytest.raises(helm_python.HelmError, match="HTTPS only; set hooks.tls.enabled=true"):
        render(chart, {"admission": {"enabled": True}})


def test_each_controllers_validate_hook_is_called_at_the_release_service(admission: Rendered) -> None:
    configs = {c["metadata"]["name"]: c for c in admission.all("ValidatingWebhookConfiguration")}
    assert set(configs) == {"metahook-hello-validate", "metahook-hikawa-validate", "metahook-foo-validate"}
    secret = admission.one("Secret", "metahook-hooks-tls")["data"]
    for name, config in configs.items():
        controller = name.removeprefix("metahook-").removesuffix("-validate")
        [webhook] = config["webhooks"]
        assert webhook["clientConfig"]["service"] == {
            "name": "metahook", "namespace": DEFAULT_NAMESPACE, "port": 80, "path": f"/{controller}/validate"}
        # The CA that signed the certificate the pod serves.
        assert webhook["clientConfig"]["caBundle"] == secret["ca.crt"]
        assert base64.b64decode(webhook["clientConfig"]["caBundle"]).startswith(b"-----BEGIN CERTIFICATE")
        assert webhook["namespaceSelector"] == {"matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": [DEFAULT_NAMESPACE]}]}
        assert webhook["failurePolicy"] == "Fail" and webhook["timeoutSeconds"] == 5
        assert webhook["sideEffects"] == "None" and webhook["admissionReviewVersions"] == ["v1"]
        assert webhook["rules"][0]["operations"] == ["CREATE", "UPDATE"]
        assert config["metadata"]["labels"]["app.kubernetes.io/instance"] == "metahook"
    assert configs["metahook-hello-validate"]["webhooks"][0]["rules"][0]["resources"] == ["helloes"]


def test_a_disabled_controller_has_no_webhook(chart: helm_python.Chart) -> None:
    out = render(chart, {**ADMISSION, "controllers": {"hikawa": {"enabled": False}}})
    names = {c["metadata"]["name"] for c in out.all("ValidatingWebhookConfiguration")}
    assert names == {"metahook-hello-validate", "metahook-foo-validate"}


def test_cert_manager_injects_the_ca_and_the_values_set_the_policy(chart: helm_python.Chart) -> None:
    out = render(chart, {"hooks": {"tls": {"enabled": True, "certManager": {"enabled": True}}},
                         "admission": {"enabled": True, "failurePolicy": "Ignore", "timeoutSeconds": 12}},
                 namespace="platform")
    for config in out.all("ValidatingWebhookConfiguration"):
        assert config["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == "platform/metahook-hooks-tls"
        [webhook] = config["webhooks"]
        assert "caBundle" not in webhook["clientConfig"]
        assert webhook["failurePolicy"] == "Ignore" and webhook["timeoutSeconds"] == 12
        assert webhook["namespaceSelector"]["matchExpressions"][0]["values"] == ["platform"]


def test_the_network_policy_lets_the_api_server_reach_the_hooks_port(admission: Rendered,
                                                                     chart: helm_python.Chart) -> None:
    rules = admission.one("NetworkPolicy")["spec"]["ingress"]
    assert {"ports": [{"port": "http", "protocol": "TCP"}]} in rules
    narrowed = render(chart, {**ADMISSION, "networkPolicy": {"apiFrom": [{"ipBlock": {"cidr": "10.0.0.0/28"}}]}})
    rules = narrowed.one("NetworkPolicy")["spec"]["ingress"]
    assert {"ports": [{"port": "http", "protocol": "TCP"}], "from": [{"ipBlock": {"cidr": "10.0.0.0/28"}}]} in rules
