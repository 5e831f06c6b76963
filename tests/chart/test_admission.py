"""Admission webhooks (admission.enabled): the controllers' validate (and default) hooks
registered with the API server — one ValidatingWebhookConfiguration per
controller with a validate hook (admission/<controller>.yaml), at this
release's Service over HTTPS, its CA the hooks' own, the release's
namespace left out, and a NetworkPolicy that lets the API server in. The
last test installs it on the real node in both modes (marked `cluster`)."""

from __future__ import annotations

import base64
from typing import Any, Callable

import helm_python
import pytest

from chartcluster import Cluster, api_path, cluster, delete_work_namespace, installed, report, unique, waiter  # noqa: F401
from conftest import DEFAULT_NAMESPACE, Rendered, render
from kube import Kube
from metacontroller_pod import metacontroller  # noqa: F401

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


@pytest.mark.cluster
@pytest.mark.parametrize("mode", ["driver", "metacontroller"])
def test_the_api_server_asks_the_hooks_the_chart_registers(cluster: Cluster, chart: helm_python.Chart,
                                                          mode: str, request: pytest.FixtureRequest) -> None:
    """Installed in each mode with admission.enabled and mutual TLS (next to
    the real Metacontroller in its mode):
    kube-apiserver calls the release's Service over HTTPS, verified with the
    chart's CA, and is answered without a client certificate (the admission
    paths are open). A Hello whose image has a space is refused with the
    hook's message and field, and not stored; a valid one is stored; in the
    release's own namespace (left out of the webhooks) the same bad Hello
    passes a dry run. A Foo created without deploymentName is stored with its
    own name there (the default hook), and Foos are read at the version they
    were not written at (Foo's CRD, templated with the release, converted by
    its Service). Uninstalled, the configurations go with the release."""
    admin = cluster.admin
    configs = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
    if mode == "metacontroller":
        request.getfixturevalue("metacontroller")
    values = {"mode": mode, "hooks": {"tls": {"enabled": True, "clientAuth": True}},
              "admission": {"enabled": True}}
    with installed(cluster, chart, values, f"adm-{mode[:2]}") as release:
        fullname = release.one("Service")["metadata"]["name"]
        mine = admin.items(configs, labelSelector=f"app.kubernetes.io/instance={release.release}")
        assert {c["metadata"]["name"] for c in mine} == {
            f"{fullname}-{c}-validate" for c in ("hello", "hikawa", "foo")}, mine
        work = unique("admission")
        admin.create("/api/v1/namespaces", {"metadata": {"name": work}})
        wait = waiter(cluster, work, also=lambda: report(cluster, release.namespace, release.selector))
        spaced = {"apiVersion": "fraim.co.jp/v1", "kind": "Hello", "metadata": {"name": "spaced"},
                  "spec": {"replicas": 0, "image": "nginx demos"}}
        hellos = api_path("fraim.co.jp/v1", "helloes", work)
        try:
            def refusal() -> dict | None:
                reply = admin.call("POST", hellos, spaced)
                if reply.ok:
                    # In before the API server read the configuration.
                    admin.call("DELETE", f"{hellos}/spaced")
                if reply.status != 422:
                    # Stored, or the webhook not reachable yet (500: failed
                    # calling webhook): asked again.
                    print(f"not refused yet: {reply.status} {str(reply.body)[:300]}")
                    return None
                return {"status": reply.status, "body": reply.body}

            body = wait("kube-apiserver to ask the release's validate webhook", refusal)["body"]
            assert body["message"] == ('admission webhook "validate.hello.fraim.co.jp" denied the request: '
                                       'spec.image: must not contain whitespace'), body
            assert body["details"]["causes"] == [
                {"reason": "FieldValueInvalid", "field": "spec.image", "message": "must not contain whitespace"}], body
            assert admin.get(f"{hellos}/spaced") is None, "a refused Hello was stored"
            fine = {**spaced, "metadata": {"name": "fine"}, "spec": {"replicas": 0}}
            assert admin.call("POST", hellos, fine).ok
            own = api_path("fraim.co.jp/v1", "helloes", release.namespace)
            dry = admin.call("POST", own, spaced, query={"dryRun": "All"})
            assert dry.ok, f"the release's own namespace was asked: {dry}"
            converted_and_defaulted(admin, wait, work)
        finally:
            delete_work_namespace(admin, work)
    left = admin.items(configs, labelSelector=f"app.kubernetes.io/instance={release.release}")
    assert not left, f"left behind by helm uninstall: {[c['metadata']['name'] for c in left]}"


FOO_V1ALPHA1, FOO_V1 = "samplecontroller.k8s.io/v1alpha1", "samplecontroller.k8s.io/v1"


def converted_and_defaulted(admin: Kube, wait: Callable[..., Any], work: str) -> None:
    """Foo's default hook and convert hook, asked by kube-apiserver through
    the release's Service."""
    foos, foos_v1 = api_path(FOO_V1ALPHA1, "foos", work), api_path(FOO_V1, "foos", work)
    unnamed = {"apiVersion": FOO_V1ALPHA1, "kind": "Foo", "metadata": {"name": "unnamed"}, "spec": {"replicas": 0}}

    def defaulted() -> dict | None:
        reply = admin.call("POST", foos, unnamed)
        if not reply.ok:
            # 422 from validate (an empty name) until the API server has read
            # the MutatingWebhookConfiguration.
            print(f"not defaulted yet: {reply.status} {str(reply.body)[:300]}")
            return None
        return reply.body

    stored = wait("kube-apiserver to ask the release's default webhook", defaulted)
    assert stored["spec"] == {"deploymentName": "unnamed", "replicas": 0}, stored

    def at_v1() -> dict | None:
        reply = admin.call("GET", f"{foos_v1}/unnamed")
        return reply.body if reply.ok else None

    read = wait("kube-apiserver to convert a Foo through the release's Service", at_v1)
    assert read["apiVersion"] == FOO_V1 and read["spec"] == {"deployment": {"name": "unnamed", "replicas": 0}}, read
    assert read["metadata"]["uid"] == stored["metadata"]["uid"], read
    restructured = {"apiVersion": FOO_V1, "kind": "Foo", "metadata": {"name": "restructured"},
                    "spec": {"deployment": {"name": "web", "replicas": 0}}}
    created = admin.call("POST", foos_v1, restructured)
    assert created.ok, created
    old = admin.get(f"{foos}/restructured")
    assert old["spec"] == {"deploymentName": "web", "replicas": 0}, old
