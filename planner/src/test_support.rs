//! What the planner's and the driver's tests build: the `demo` controller
//! (`Thing` parents owning Deployments, and ConfigMaps when asked),
//! manifests, and cluster objects. One home, so the planner, executor,
//! worker and pipeline tests agree on them (the driver's through the
//! `test-support` feature).
#![allow(missing_docs)]

use crate::config::{self, UpdateStrategy};
use crate::decide::model::{Driven, DrivenChild, ResolvedType};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use serde_json::{Value, json};
use std::sync::Arc;

/// The finalizer of the `demo` controller.
pub const FINALIZER: &str = "metacontroller.io/compositecontroller-demo";
/// The finalizer of the `svc` decorator.
pub const DECORATOR_FINALIZER: &str = "metacontroller.io/decoratorcontroller-svc";

/// A controller manifest: `kind` (`CompositeController`,
/// `DecoratorController`) named `name`, with `spec` (YAML, indented by two).
pub fn manifest(kind: &str, name: &str, spec: &str) -> String {
    format!(
        "apiVersion: metacontroller.k8s.io/v1alpha1\nkind: {kind}\nmetadata: {{name: {name}}}\nspec:\n{spec}"
    )
}

/// A type with the plural kube derives from its kind.
pub fn api_type(group: &str, version: &str, kind: &str, namespaced: bool) -> ResolvedType {
    let plural = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind)).plural;
    ResolvedType::new(group, version, kind, &plural, namespaced)
}

/// The `demo` controller, as a test wants it.
#[derive(Debug, Clone, Copy)]
pub struct Demo {
    /// The Deployments' update strategy.
    pub strategy: UpdateStrategy,
    pub finalize: bool,
    pub generate_selector: bool,
    /// A second child type, ConfigMaps (OnDelete). Off where a test runs
    /// caches: each child type is a watch the scripted API server answers.
    pub config_maps: bool,
}

impl Default for Demo {
    fn default() -> Self {
        Demo {
            strategy: UpdateStrategy::InPlace,
            finalize: true,
            generate_selector: true,
            config_maps: false,
        }
    }
}

impl Demo {
    pub fn build(self) -> Driven {
        let strategy = self.strategy.method();
        let config_maps = if self.config_maps {
            "    - {apiVersion: v1, resource: configmaps}\n"
        } else {
            ""
        };
        let finalize = if self.finalize {
            "    finalize: {version: v2, webhook: {url: \"http://h/demo/finalize\"}}\n"
        } else {
            ""
        };
        let spec = format!(
            r#"  parentResource: {{apiVersion: example.com/v1, resource: things}}
  childResources:
    - {{apiVersion: apps/v1, resource: deployments, updateStrategy: {{method: {strategy}}}}}
{config_maps}  generateSelector: {generate_selector}
  hooks:
    sync: {{version: v2, webhook: {{url: "http://h/demo/sync"}}}}
{finalize}"#,
            generate_selector = self.generate_selector,
        );
        let text = manifest("CompositeController", "demo", &spec);
        let config = config::parse("demo.yaml", &text).expect("the demo manifest is valid");
        let mut children = vec![DrivenChild {
            resource: api_type("apps", "v1", "Deployment", true),
            strategy: self.strategy,
        }];
        if self.config_maps {
            children.push(DrivenChild {
                resource: api_type("", "v1", "ConfigMap", true),
                strategy: UpdateStrategy::OnDelete,
            });
        }
        Driven {
            config,
            parent: api_type("example.com", "v1", "Thing", true),
            children,
            shard_labels: Vec::new(),
            status_subresource: true,
        }
    }
}

/// The `demo` parent `shop/p` (UID `p1`) at generation 2, no finalizer.
pub fn parent() -> DynamicObject {
    Obj::parent()
        .generation(2)
        .resource_version("10")
        .data("spec", json!({}))
        .build()
}

/// `svc`: decorates Pods annotated `expose`, attaching Services.
pub fn decorator(finalize: bool, status_subresource: bool) -> Driven {
    let finalize = if finalize {
        "    finalize: {webhook: {url: \"http://h/finalize\"}}\n"
    } else {
        ""
    };
    let spec = format!(
        r#"  resources:
    - apiVersion: v1
      resource: pods
      annotationSelector: {{matchExpressions: [{{key: expose, operator: Exists}}]}}
  attachments:
    - {{apiVersion: v1, resource: services, updateStrategy: {{method: InPlace}}}}
  hooks:
    sync: {{webhook: {{url: "http://h/sync"}}}}
{finalize}"#
    );
    let text = manifest("DecoratorController", "svc", &spec);
    Driven {
        config: config::parse("svc.yaml", &text).expect("the svc manifest is valid"),
        parent: api_type("", "v1", "Pod", true),
        children: vec![DrivenChild {
            resource: api_type("", "v1", "Service", true),
            strategy: UpdateStrategy::InPlace,
        }],
        shard_labels: Vec::new(),
        status_subresource,
    }
}

/// Small chained builder for objects.
#[derive(Clone)]
pub struct Obj(pub DynamicObject);

impl Obj {
    pub fn new(api_version_kind: (&str, &str, &str), name: &str) -> Self {
        let (g, v, k) = api_version_kind;
        let mut o = DynamicObject::new(
            name,
            &ApiResource::from_gvk(&GroupVersionKind::gvk(g, v, k)),
        );
        o.metadata.namespace = Some("shop".to_owned());
        o.metadata.uid = Some(format!("uid-{name}"));
        o.metadata.resource_version = Some("1".to_owned());
        o.metadata.generation = Some(1);
        Obj(o)
    }
    pub fn parent() -> Self {
        Self::new(("example.com", "v1", "Thing"), "p").uid("p1")
    }
    /// The Pod `shop/web-0` (UID `pod1`), which `svc` may decorate.
    pub fn pod() -> Self {
        Self::new(("", "v1", "Pod"), "web-0").uid("pod1")
    }
    /// A Service the Pod `web-0` (`pod1`) controls: what `svc` attaches.
    pub fn attachment(name: &str) -> Self {
        Self::new(("", "v1", "Service"), name).controlled_by(OwnerReference {
            api_version: "v1".to_owned(),
            kind: "Pod".to_owned(),
            name: "web-0".to_owned(),
            uid: "pod1".to_owned(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        })
    }
    pub fn deployment(name: &str) -> Self {
        Self::new(("apps", "v1", "Deployment"), name)
    }
    pub fn uid(mut self, uid: &str) -> Self {
        self.0.metadata.uid = Some(uid.to_owned());
        self
    }
    pub fn namespace(mut self, ns: &str) -> Self {
        self.0.metadata.namespace = Some(ns.to_owned());
        self
    }
    pub fn label(mut self, k: &str, v: &str) -> Self {
        self.0
            .metadata
            .labels
            .get_or_insert_with(Default::default)
            .insert(k.to_owned(), v.to_owned());
        self
    }
    pub fn annotation(mut self, k: &str, v: &str) -> Self {
        self.0
            .metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(k.to_owned(), v.to_owned());
        self
    }
    pub fn finalizer(mut self, f: &str) -> Self {
        self.0
            .metadata
            .finalizers
            .get_or_insert_with(Vec::new)
            .push(f.to_owned());
        self
    }
    pub fn deleting(mut self) -> Self {
        self.0.metadata.deletion_timestamp = Some(Time("2026-11-22T03:00:00Z".parse().unwrap()));
        self
    }
    pub fn generation(mut self, g: i64) -> Self {
        self.0.metadata.generation = Some(g);
        self
    }
    /// Controlled by the `Thing` with this UID, as the driver sets it.
    pub fn owned_by(self, uid: &str) -> Self {
        self.controlled_by(OwnerReference {
            api_version: "example.com/v1".to_owned(),
            kind: "Thing".to_owned(),
            name: "owner".to_owned(),
            uid: uid.to_owned(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        })
    }
    pub fn controlled_by(mut self, owner: OwnerReference) -> Self {
        self.0
            .metadata
            .owner_references
            .get_or_insert_with(Vec::new)
            .push(owner);
        self
    }
    pub fn resource_version(mut self, rv: &str) -> Self {
        self.0.metadata.resource_version = Some(rv.to_owned());
        self
    }
    pub fn build(self) -> DynamicObject {
        self.0
    }
    pub fn data(mut self, key: &str, value: Value) -> Self {
        self.0.data[key] = value;
        self
    }
    pub fn arc(self) -> Arc<DynamicObject> {
        Arc::new(self.0)
    }
}
