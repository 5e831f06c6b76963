//! The CompositeController and DecoratorController manifests as written:
//! serde's mirror of the YAML.
//!
//! No rule beyond the types is checked here. Every struct keeps the keys it
//! does not know in `other`, so that the first one is refused by its path
//! (with a hint for Metacontroller features outside the subset) rather than
//! ignored; type errors come with their path from `serde_path_to_error`.
//! Fields that are required or have rules beyond their type are checked
//! from `super::document` on, so that each message names the field and the
//! rule.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use serde::Deserialize;
use serde::de::IgnoredAny;
use std::collections::BTreeMap;

pub type Other = BTreeMap<String, IgnoredAny>;

/// One mapping of the YAML: serde's mirror with its keys in camelCase, and
/// every key it does not name kept in `other` (the rule above, written
/// once, so no struct can forget it).
macro_rules! mapping {
    ($(
        $(#[$attr:meta])*
        $name:ident $(<$param:ident = $default:ty>)? {
            $($(#[$field_attr:meta])* $field:ident: $ty:ty,)*
        }
    )*) => {$(
        $(#[$attr])*
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        pub struct $name $(<$param = $default>)? {
            $($(#[$field_attr])* pub $field: $ty,)*
            #[serde(flatten)]
            pub other: Other,
        }
    )*};
}

mapping! {
    /// A manifest; `S` is a CompositeController's [`Spec`] or a
    /// DecoratorController's [`DecoratorSpec`].
    Document<S = Spec> {
        api_version: Option<String>,
        kind: Option<String>,
        #[serde(default)]
        metadata: Metadata,
        spec: Option<S>,
        /// Written by Metacontroller; accepted and not read.
        #[serde(default, rename = "status")]
        _status: Option<IgnoredAny>,
    }

    Spec {
        parent_resource: Option<Parent>,
        #[serde(default)]
        child_resources: Option<Vec<Child>>,
        generate_selector: Option<bool>,
        resync_period_seconds: Option<i64>,
        hooks: Option<Hooks>,
        endpoint_configs: Option<Vec<EndpointConfig>>,
    }

    /// A webhook's connection settings by host (`spec.endpointConfigs[]`).
    EndpointConfig {
        host: Option<String>,
        ca_bundle: Option<CaBundle>,
        #[serde(rename = "clientTLS")]
        client_tls: Option<ClientTls>,
        authorization: Option<Authorization>,
        basic_auth: Option<BasicAuth>,
    }

    DecoratorSpec {
        resources: Option<Vec<Resource>>,
        attachments: Option<Vec<Child>>,
        resync_period_seconds: Option<i64>,
        hooks: Option<Hooks>,
        endpoint_configs: Option<Vec<EndpointConfig>>,
    }

    /// One of a decorator's `spec.resources`.
    Resource {
        api_version: Option<String>,
        resource: Option<String>,
        label_selector: Option<LabelSelector>,
        annotation_selector: Option<AnnotationSelector>,
        ignore_status_changes: Option<bool>,
    }

    AnnotationSelector {
        match_annotations: Option<BTreeMap<String, String>>,
        match_expressions: Option<Vec<LabelSelectorRequirement>>,
    }

    Parent {
        api_version: Option<String>,
        resource: Option<String>,
        label_selector: Option<LabelSelector>,
        revision_history: Option<RevisionHistory>,
        ignore_status_changes: Option<bool>,
    }

    RevisionHistory {
        field_paths: Option<Vec<String>>,
    }

    Child {
        api_version: Option<String>,
        resource: Option<String>,
        update_strategy: Option<UpdateStrategy>,
    }

    UpdateStrategy {
        method: Option<String>,
        status_checks: Option<StatusChecks>,
    }

    StatusChecks {
        conditions: Option<Vec<ConditionCheck>>,
    }

    ConditionCheck {
        #[serde(rename = "type")]
        type_: Option<String>,
        status: Option<String>,
        reason: Option<String>,
    }

    Hooks {
        sync: Option<Hook>,
        finalize: Option<Hook>,
        customize: Option<Hook>,
    }

    Hook {
        version: Option<String>,
        webhook: Option<Webhook>,
    }

    Webhook {
        url: Option<String>,
        service: Option<Service>,
        path: Option<String>,
        timeout: Option<String>,
        #[serde(rename = "responseUnMarshallMode")]
        response_unmarshall_mode: Option<String>,
        etag: Option<Etag>,
        ca_bundle: Option<CaBundle>,
        #[serde(rename = "clientTLS")]
        client_tls: Option<ClientTls>,
        authorization: Option<Authorization>,
        basic_auth: Option<BasicAuth>,
    }

    Etag {
        enabled: Option<bool>,
        cache_timeout_seconds: Option<i64>,
        cache_cleanup_seconds: Option<i64>,
    }

    CaBundle {
        inline: Option<String>,
        secret_ref: Option<Ref>,
        config_map_ref: Option<Ref>,
    }

    /// Metacontroller's SecretRef, SecretKeyRef and ResourceKeyRef.
    Ref {
        name: Option<String>,
        namespace: Option<String>,
        key: Option<String>,
    }

    ClientTls {
        secret_ref: Option<Ref>,
        cert_key: Option<String>,
        private_key_key: Option<String>,
    }

    Authorization {
        #[serde(rename = "type")]
        scheme: Option<String>,
        secret_ref: Option<Ref>,
    }

    BasicAuth {
        secret_ref: Option<Ref>,
        username_key: Option<String>,
        password_key: Option<String>,
    }

    Service {
        name: Option<String>,
        namespace: Option<String>,
        port: Option<u64>,
        protocol: Option<String>,
    }
}

#[derive(Deserialize, Default)]
pub struct Metadata {
    pub name: Option<String>,
    pub annotations: Option<BTreeMap<String, String>>,
}

/// What the specs of both kinds have besides their own fields.
pub struct Shared {
    pub resync_period_seconds: Option<i64>,
    pub hooks: Option<Hooks>,
    pub endpoint_configs: Option<Vec<EndpointConfig>>,
}

/// A spec of either kind, as `super::document` reads it.
pub trait ControllerSpec {
    fn other(&self) -> &Other;
    fn shared(self) -> Shared;
}

/// One impl for both kinds: their shared fields have the same names.
macro_rules! controller_spec {
    ($($spec:ty),*) => {$(
        impl ControllerSpec for $spec {
            fn other(&self) -> &Other {
                &self.other
            }

            fn shared(self) -> Shared {
                Shared {
                    resync_period_seconds: self.resync_period_seconds,
                    hooks: self.hooks,
                    endpoint_configs: self.endpoint_configs,
                }
            }
        }
    )*};
}

controller_spec!(Spec, DecoratorSpec);
