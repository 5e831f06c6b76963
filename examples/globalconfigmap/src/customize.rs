//! The customize hook: with each sync, send the source ConfigMap and every
//! Namespace. Both arrive as related objects whoever owns them; a new
//! Namespace, or a change to the source, is itself a reason to sync.

use crate::resource::GlobalConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use metahook::{Customize, CustomizeAnswer, RelatedResourceRule};

pub fn customize(req: &Customize<GlobalConfigMap>) -> CustomizeAnswer {
    // A spec that cannot be read names no source: sync reports it.
    let Ok(spec) = &req.parent.spec else {
        return CustomizeAnswer::none();
    };
    CustomizeAnswer::none()
        .rule(RelatedResourceRule {
            api_version: "v1".to_owned(),
            resource: "configmaps".to_owned(),
            namespace: Some(spec.source_namespace.clone()),
            names: Some(vec![spec.source_name.clone()]),
            ..RelatedResourceRule::default()
        })
        .rule(RelatedResourceRule {
            api_version: "v1".to_owned(),
            resource: "namespaces".to_owned(),
            // The empty selector: every Namespace.
            label_selector: Some(LabelSelector::default()),
            ..RelatedResourceRule::default()
        })
}
