"""The real Metacontroller (v4.17.2) as a pod on the node, for the tests of
Metacontroller mode (test_metacontroller_mode.py, test_scaffold.py): the
image tests/cluster preloads as localhost/metahook-test/metacontroller:
v4.17.2, built from its unmodified source by tests/metacontroller/build.sh,
installed from its own manifests (manifests/production/ of the source that
script extracts to target/metacontroller/src, read at test time): its CRDs,
its ServiceAccount and RBAC as they are, and its pod as its StatefulSet
describes it (image swapped for the preloaded one, pullPolicy Never) but run
by a Deployment: this cluster's controller-manager runs no StatefulSet
controller.
"""

from __future__ import annotations

import copy
from typing import Iterator

import pytest

from chartcluster import Cluster, api_path, waiter
from conftest import ROOT, load_yaml_documents

METACONTROLLER_SRC = ROOT / "target" / "metacontroller" / "src" / "manifests" / "production"
METACONTROLLER_IMAGE = "localhost/metahook-test/metacontroller:v4.17.2"
METACONTROLLER_NS = "metacontroller"
COMPOSITECONTROLLERS = "/apis/metacontroller.k8s.io/v1alpha1/compositecontrollers"

RESOURCES = {
    "Namespace": ("v1", "namespaces", False), "ServiceAccount": ("v1", "serviceaccounts", True),
    "ClusterRole": ("rbac.authorization.k8s.io/v1", "clusterroles", False),
    "ClusterRoleBinding": ("rbac.authorization.k8s.io/v1", "clusterrolebindings", False),
    "CustomResourceDefinition": ("apiextensions.k8s.io/v1", "customresourcedefinitions", False),
    "Deployment": ("apps/v1", "deployments", True),
}


def metacontroller_objects() -> list[dict]:
    """Metacontroller's production manifests, as its kustomization lists
    them, with its StatefulSet as a Deployment of the same pod."""
    if not METACONTROLLER_SRC.is_dir():
        pytest.fail(f"no {METACONTROLLER_SRC}: tests/metacontroller/build.sh extracts Metacontroller's source",
                    pytrace=False)
    objects = []
    for name in ["metacontroller-namespace.yaml", "metacontroller-rbac.yaml", "metacontroller-crds-v1.yaml",
                 "metacontroller.yaml"]:
        objects += load_yaml_documents((METACONTROLLER_SRC / name).read_text())
    out = []
    for obj in objects:
        if obj["kind"] == "StatefulSet":
            spec = obj["spec"]
            template = copy.deepcopy(spec["template"])
            [container] = template["spec"]["containers"]
            assert container["image"].startswith("ghcr.io/metacontroller/metacontroller:v4.17.2"), container
            container["image"] = METACONTROLLER_IMAGE
            container["imagePullPolicy"] = "Never"
            obj = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": obj["metadata"],
                   "spec": {"replicas": spec["replicas"], "selector": spec["selector"], "template": template}}
        assert obj["kind"] in RESOURCES, obj["kind"]
        out.append(obj)
    return out


def metacontroller_object_path(obj: dict) -> str:
    api_version, resource, namespaced = RESOURCES[obj["kind"]]
    ns = obj["metadata"].get("namespace") if namespaced else None
    return api_path(api_version, resource, ns, obj["metadata"]["name"])


@pytest.fixture(scope="module")
def metacontroller(cluster: Cluster) -> Iterator[dict]:
    """Metacontroller running, Ready (its /readyz), as a pod the kubelet runs."""
    admin = cluster.admin
    objects = metacontroller_objects()
    ns_path = api_path("v1", "namespaces", None, METACONTROLLER_NS)
    # An earlier run's namespace may still be terminating.
    waiter(cluster, METACONTROLLER_NS)(
        f"namespace {METACONTROLLER_NS} to be gone or active",
        lambda: (admin.get(ns_path) or {}).get("status", {}).get("phase") != "Terminating")
    try:
        for obj in objects:
            admin.ok("PATCH", metacontroller_object_path(obj), obj, query={"fieldManager": "metahook-chart-test", "force": "true"},
                     content_type="application/apply-patch+yaml")
        wait = waiter(cluster, METACONTROLLER_NS)
        for crd in (o for o in objects if o["kind"] == "CustomResourceDefinition"):
            wait(f"the CRD {crd['metadata']['name']} established", lambda: any(
                c["type"] == "Established" and c["status"] == "True"
                for c in (admin.get(metacontroller_object_path(crd)) or {}).get("status", {}).get("conditions", [])))

        def ready() -> dict | None:
            pods = admin.items(api_path("v1", "pods", METACONTROLLER_NS),
                               labelSelector="app.kubernetes.io/name=metacontroller")
            ok = [p for p in pods if any(c["type"] == "Ready" and c["status"] == "True"
                                         for c in p.get("status", {}).get("conditions", []))]
            return ok[0] if ok else None

        pod = wait("Metacontroller's pod Ready", ready)
        [status] = pod["status"]["containerStatuses"]
        assert status["containerID"].startswith("containerd://"), status
        yield pod
    finally:
        for obj in reversed(objects):
            if obj["kind"] != "Namespace":
                admin.delete(metacontroller_object_path(obj))
        admin.delete(ns_path)
        waiter(cluster, METACONTROLLER_NS)(f"namespace {METACONTROLLER_NS} to be deleted",
                                           lambda: admin.get(ns_path) is None)
