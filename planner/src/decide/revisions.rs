//! Metacontroller's ControllerRevision (`metacontroller.k8s.io/v1alpha1`),
//! which rolling updates keep a parent's history in (`decide/plan/rolling/`):
//! its API type, and its CRD (`driver/crds/`, `metahook crds --driver`), so
//! the driver needs no Metacontroller install. The same group, kind and
//! shape as Metacontroller's, so that a cluster moves between the two
//! engines mid-rollout. Not in the chart's `crds/`: Helm applies those
//! server-side, which conflicts with Metacontroller's copy where both are
//! installed (the chart's tests met it), and the chart's controllers do not
//! roll.

use crate::decide::model::ResolvedType;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::json;

pub fn revision_type() -> ResolvedType {
    ResolvedType::new(
        "metacontroller.k8s.io",
        "v1alpha1",
        "ControllerRevision",
        "controllerrevisions",
        true,
    )
}

/// The ControllerRevision CRD: `parentPatch` (the parent's followed
/// fields, any shape) and `children[]` (`apiGroup`, `kind`, `names`), at the
/// top level as Metacontroller has them.
pub fn crd() -> CustomResourceDefinition {
    let claims = json!({
        "type": "object",
        "description": "The children of one kind this revision last updated.",
        "required": ["apiGroup", "kind", "names"],
        "properties": {
            "apiGroup": {"type": "string"},
            "kind": {"type": "string"},
            "names": {"type": "array", "items": {"type": "string"}},
        },
    });
    let schema = json!({
        "type": "object",
        "description": "One revision of a CompositeController parent whose children roll: \
            the parent's fields it had, and the children it claims.",
        "required": ["metadata", "parentPatch"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "parentPatch": {
                "type": "object",
                "description": "The parent restricted to revisionHistory.fieldPaths.",
                "x-kubernetes-preserve-unknown-fields": true,
            },
            "children": {"type": "array", "items": claims},
        },
    });
    let api = revision_type().api;
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": format!("{}.{}", api.plural, api.group),
            // The API server refuses a CRD in a *.k8s.io group without it
            // (a protected group); this value is what unapproved ones say.
            "annotations": {"api-approved.kubernetes.io": "unapproved, request not yet submitted"},
        },
        "spec": {
            "group": api.group,
            "names": {
                "kind": api.kind,
                "listKind": format!("{}List", api.kind),
                "plural": api.plural,
                "singular": "controllerrevision",
            },
            "scope": "Namespaced",
            "versions": [{
                "name": api.version,
                "served": true,
                "storage": true,
                "schema": {"openAPIV3Schema": schema},
                "subresources": {"status": {}},
            }],
        },
    }))
    .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_crd_is_metacontrollers_type() {
        let crd = super::crd();
        assert_eq!(
            crd.metadata.name.as_deref(),
            Some("controllerrevisions.metacontroller.k8s.io")
        );
        let version = &crd.spec.versions[0];
        assert_eq!(
            (version.name.as_str(), crd.spec.scope.as_str()),
            ("v1alpha1", "Namespaced")
        );
        let schema = version
            .schema
            .as_ref()
            .and_then(|s| s.open_api_v3_schema.as_ref());
        let properties = schema
            .and_then(|s| s.properties.as_ref())
            .map(|p| p.keys().cloned().collect::<Vec<_>>());
        assert_eq!(
            properties.unwrap_or_default(),
            ["apiVersion", "children", "kind", "metadata", "parentPatch"]
        );
    }
}
