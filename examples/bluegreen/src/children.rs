//! The objects a sync desires, built from the parent and the plan: the
//! ReplicaSets `<name>-blue` and `<name>-green`, and the Service.

use crate::color::{COLOR_LABEL, Color};
use crate::plan::{Set, Template};
use crate::resource::BlueGreenDeploymentSpec;
use crate::template_hash::TEMPLATE_HASH_ANNOTATION;
use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetSpec};
use k8s_openapi::api::core::v1::{PodTemplateSpec, Service, ServiceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use std::collections::BTreeMap;

/// What every child shares: the parent's name, namespace and spec, and
/// the hash of its template.
pub struct Parent<'a> {
    pub name: &'a str,
    pub namespace: Option<&'a str>,
    pub spec: &'a BlueGreenDeploymentSpec,
    pub hash: &'a str,
}

/// The ReplicaSet of `set.color`.
pub fn replica_set(parent: &Parent, set: &Set) -> ReplicaSet {
    let (template, hash) = match set.template {
        Template::Parent => (colored(&parent.spec.template, set.color), Some(parent.hash)),
        Template::Kept(rs) => (
            rs.spec
                .as_ref()
                .and_then(|s| s.template.clone())
                .unwrap_or_else(|| colored(&parent.spec.template, set.color)),
            rs.metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(TEMPLATE_HASH_ANNOTATION))
                .map(String::as_str),
        ),
    };
    let labels = template.metadata.as_ref().and_then(|m| m.labels.clone());
    let mut selector = parent.spec.selector.clone();
    with_color(&mut selector.match_labels, set.color);
    ReplicaSet {
        metadata: ObjectMeta {
            name: Some(replica_set_name(parent.name, set.color)),
            namespace: parent.namespace.map(str::to_owned),
            labels,
            annotations: hash
                .map(|h| BTreeMap::from([(TEMPLATE_HASH_ANNOTATION.to_owned(), h.to_owned())])),
            ..ObjectMeta::default()
        },
        spec: Some(ReplicaSetSpec {
            replicas: Some(set.replicas),
            min_ready_seconds: Some(parent.spec.min_ready_seconds),
            selector,
            template: Some(template),
        }),
        status: None,
    }
}

/// `<parent>-<color>`.
pub fn replica_set_name(parent: &str, color: Color) -> String {
    format!("{parent}-{color}")
}

/// The Service of the parent's `service` template, selecting the pods of
/// `serving`. Named as the template says, or as the parent.
pub fn service(parent: &Parent, serving: Color) -> Service {
    let template = &parent.spec.service;
    let mut spec: ServiceSpec = template.spec.clone();
    with_color(&mut spec.selector, serving);
    Service {
        metadata: ObjectMeta {
            name: Some(service_name(parent.name, parent.spec)),
            namespace: parent.namespace.map(str::to_owned),
            labels: template.metadata.labels.clone(),
            annotations: template.metadata.annotations.clone(),
            ..ObjectMeta::default()
        },
        spec: Some(spec),
        status: None,
    }
}

/// The Service's name.
pub fn service_name(parent: &str, spec: &BlueGreenDeploymentSpec) -> String {
    spec.service
        .metadata
        .name
        .clone()
        .unwrap_or_else(|| parent.to_owned())
}

/// The parent's pod template, its pods labelled with `color`.
fn colored(template: &PodTemplateSpec, color: Color) -> PodTemplateSpec {
    let mut template = template.clone();
    let metadata = template.metadata.get_or_insert_with(ObjectMeta::default);
    with_color(&mut metadata.labels, color);
    template
}

fn with_color(labels: &mut Option<BTreeMap<String, String>>, color: Color) {
    labels
        .get_or_insert_with(BTreeMap::new)
        .insert(COLOR_LABEL.to_owned(), color.as_str().to_owned());
}
