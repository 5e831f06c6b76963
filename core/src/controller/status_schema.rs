//! The status fields the engine writes, in the parent's CRD: the driver
//! writes `status.observedGeneration` beside the hook's status, and an API
//! server prunes a field its schema lacks, so without it every reconcile
//! would be followed by a status write that changes nothing.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps,
};

/// `crd` with `status.observedGeneration` in each version's schema whose
/// status lists its properties (one that keeps unknown fields needs none).
pub(super) fn with_engine_fields(mut crd: CustomResourceDefinition) -> CustomResourceDefinition {
    for version in &mut crd.spec.versions {
        let status = version
            .schema
            .as_mut()
            .and_then(|s| s.open_api_v3_schema.as_mut())
            .and_then(|s| s.properties.as_mut())
            .and_then(|p| p.get_mut("status"));
        let Some(status) = status else { continue };
        if status.x_kubernetes_preserve_unknown_fields == Some(true) {
            continue;
        }
        let properties = status.properties.get_or_insert_with(Default::default);
        properties
            .entry("observedGeneration".to_owned())
            .or_insert_with(|| JSONSchemaProps {
                type_: Some("integer".to_owned()),
                format: Some("int64".to_owned()),
                description: Some(
                    "The metadata.generation the controller last acted on (written by the engine)."
                        .to_owned(),
                ),
                ..JSONSchemaProps::default()
            });
    }
    crd
}
