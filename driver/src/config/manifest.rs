//! The CompositeController and DecoratorController manifests as written:
//! serde's mirror of the YAML.
//!
//! No rule beyond the types is checked here. Every struct keeps the keys it
//! does not know in `other`, so that the first one is refused by its path
//! (with a hint for Metacontroller features outside the subset) rather than
//! ignored; type errors come with their path from `serde_path_to_error`.
//! Fields that are required or have rules beyond their type are checked in
//! [`super::check`], so that each message names the field and the rule.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use serde::Deserialize;
use serde::de::IgnoredAny;
use std::collections::BTreeMap;

pub type Other = BTreeMap<String, IgnoredAny>;

/// A manifest; `S` is a CompositeController's [`Spec`] or a
/// DecoratorController's [`DecoratorSpec`].
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Document<S = Spec> {
    pub api_version: Option<String>,
    pub kind: Option<String>,
    #[serde(default)]
    pub metadata: Metadata,
    pub spec: Option<S>,
    /// Written by Metacontroller; accepted and not read.
    #[serde(default, rename = "status")]
    pub _status: Option<IgnoredAny>,
    #[serde(flatten)]
    pub other: Other,
}

#[derive(Deserialize, Default)]
pub struct Metadata {
    pub name: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Spec {
    pub parent_resource: Option<Parent>,
    #[serde(default)]
    pub child_resources: Option<Vec<Child>>,
    pub generate_selector: Option<bool>,
    pub resync_period_seconds: Option<i64>,
    pub hooks: Option<Hooks>,
    pub endpoint_configs: Option<Vec<EndpointConfig>>,
    #[serde(flatten)]
    pub other: Other,
}

/// A webhook's connection settings by host (`spec.endpointConfigs[]`).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointConfig {
    pub host: Option<String>,
    pub ca_bundle: Option<CaBundle>,
    #[serde(rename = "clientTLS")]
    pub client_tls: Option<ClientTls>,
    pub authorization: Option<Authorization>,
    pub basic_auth: Option<BasicAuth>,
    #[serde(flatten)]
    pub other: Other,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DecoratorSpec {
    pub resources: Option<Vec<Resource>>,
    pub attachments: Option<Vec<Child>>,
    pub resync_period_seconds: Option<i64>,
    pub hooks: Option<Hooks>,
    pub endpoint_configs: Option<Vec<EndpointConfig>>,
    #[serde(flatten)]
    pub other: Other,
}

/// One of a decorator's `spec.resources`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    pub api_version: Option<String>,
    pub resource: Option<String>,
    pub label_selector: Option<LabelSelector>,
    pub annotation_selector: Option<AnnotationSelector>,
    pub ignore_status_changes: Option<bool>,
    #[serde(flatten)]
    pub other: Other,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AnnotationSelector {
    pub match_annotations: Option<BTreeMap<String, String>>,
    pub match_expressions: Option<Vec<LabelSelectorRequirement>>,
    #[serde(flatten)]
    pub other: Other,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Parent {
    pub api_version: Option<String>,
    pub resource: Option<String>,
    pub label_selector: Option<LabelSelector>,
    pub revision_history: Option<RevisionHistory>,
    pub ignore_status_changes: Option<bool>,
    #[serde(flatten)]
    pub other: Other,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RevisionHistory {
    pub field_paths: Option<Vec<String>>,
    #[serde(flatten)]
    pub other: Other,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Child {
    pub api_version: Option<String>,
    pub resource: Option<String>,
    pub update_strategy: Option<UpdateStrategy>,
    #[serde(flatten)]
    pub other: Other,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateStrategy {
    pub method: Option<String>,
    pub status_checks: Option<StatusChecks>,
    #[serde(flatten)]
    pub other: Other,
}

#[derive(Deserialize)]
pub struct StatusChecks {
    pub conditions: Option<Vec<ConditionCheck>>,
    #[serde(flatten)]
    pub other: Other,
}

#[derive(Deserialize)]
pub struct ConditionCheck {
    #[serde(rename = "type")]
    pub type_: Option<String>,
    pub status: Option<String>,
    pub reason: Option<String>,
    #[serde(flatten)]
    pub other: Other,
}

#[derive(Deserialize)]
pub struct Hooks {
    pub sync: Option<Hook>,
    pub finalize: Option<Hook>,
    pub customize: Option<Hook>,
    #[serde(flatten)]
    pub other: Other,
}

#[derive(Deserialize)]
pub struct Hook {
    pub version: Option<String>,
    pub webhook: Option<Webhook>,
    #[serde(flatten)]
    pub other: Other,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Webhook {
    pub url: Option<String>,
    pub service: Option<Service>,
    pub path: Option<String>,
    pub timeout: Option<String>,
    #[serde(rename = "responseUnMarshallMode")]
    pub response_unmarshall_mode: Option<String>,
    pub etag: Option<Etag>,
    pub ca_bundle: Option<CaBundle>,
    #[serde(rename = "clientTLS")]
    pub client_tls: Option<ClientTls>,
    pub authorization: Option<Authorization>,
    pub basic_auth: Option<BasicAuth>,
    #[serde(flatten)]
    pub other: Other,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Etag {
    pub enabled: Option<bool>,
    pub cache_timeout_seconds: Option<i64>,
    pub cache_cleanup_seconds: Option<i64>,
    #[serde(flatten)]
    pub other: Other,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CaBundle {
    pub inline: Option<String>,
    pub secret_ref: Option<Ref>,
    pub config_map_ref: Option<Ref>,
    #[serde(flatten)]
    pub other: Other,
}

/// Metacontroller's SecretRef, SecretKeyRef and ResourceKeyRef.
#[derive(Deserialize)]
pub struct Ref {
    pub name: Option<String>,
    pub namespace: Option<String>,
    pub key: Option<String>,
    #[serde(flatten)]
    pub other: Other,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientTls {
    pub secret_ref: Option<Ref>,
    pub cert_key: Option<String>,
    pub private_key_key: Option<String>,
    #[serde(flatten)]
    pub other: Other,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Authorization {
    #[serde(rename = "type")]
    pub scheme: Option<String>,
    pub secret_ref: Option<Ref>,
    #[serde(flatten)]
    pub other: Other,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BasicAuth {
    pub secret_ref: Option<Ref>,
    pub username_key: Option<String>,
    pub password_key: Option<String>,
    #[serde(flatten)]
    pub other: Other,
}

#[derive(Deserialize)]
pub struct Service {
    pub name: Option<String>,
    pub namespace: Option<String>,
    pub port: Option<u64>,
    pub protocol: Option<String>,
    #[serde(flatten)]
    pub other: Other,
}
