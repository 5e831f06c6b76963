//! What a controller controls and how: its parent and child types (or
//! the type it decorates and its attachments), each with its update
//! strategy, and where its manifest's webhooks point.

use crate::object::TypeRef;

/// How Metacontroller (or the driver) brings an existing child to what is
/// desired (docs/metacontroller.md §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdateStrategy {
    /// Never update; a deleted child is created again.
    OnDelete,
    /// Delete and create again.
    Recreate,
    /// Update in place.
    InPlace,
    /// [`UpdateStrategy::Recreate`], one child at a time, waiting for each
    /// to be ready.
    RollingRecreate,
    /// [`UpdateStrategy::InPlace`], one child at a time.
    RollingInPlace,
}

impl UpdateStrategy {
    /// The name a manifest's `updateStrategy.method` gives it.
    pub fn method(self) -> &'static str {
        match self {
            UpdateStrategy::OnDelete => "OnDelete",
            UpdateStrategy::Recreate => "Recreate",
            UpdateStrategy::InPlace => "InPlace",
            UpdateStrategy::RollingRecreate => "RollingRecreate",
            UpdateStrategy::RollingInPlace => "RollingInPlace",
        }
    }
}

/// A child (or attachment) type and how it is updated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildType {
    /// The type.
    pub type_ref: TypeRef,
    /// How an object of it is brought to what the hook desires.
    pub update: UpdateStrategy,
}

/// Where a manifest's webhooks point: a Service in the cluster, as the
/// chart installs metahook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Webhooks {
    /// The Service's name.
    pub service: String,
    /// The Service's namespace.
    pub namespace: String,
    /// The Service's port (the Service forwards it to metahook's
    /// `--listen`).
    pub port: u16,
}

impl Default for Webhooks {
    /// The Service of a release named `metahook` in namespace `metahook`.
    fn default() -> Self {
        Webhooks {
            service: "metahook".to_owned(),
            namespace: "metahook".to_owned(),
            port: 80,
        }
    }
}

/// The two kinds of controller Metacontroller runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shape {
    /// A CompositeController: one parent type and the children it owns.
    Composite {
        /// The parent type (`spec.parentResource`).
        parent: TypeRef,
        /// The child types (`spec.childResources`), in the order declared.
        children: Vec<ChildType>,
        /// Whether children are matched by a label Metacontroller generates
        /// (`spec.generateSelector`; see
        /// [`Composite::generate_selector`](crate::Composite::generate_selector)).
        generate_selector: bool,
    },
    /// A DecoratorController: objects of other types, decorated with
    /// labels, annotations and attachments.
    Decorator {
        /// The decorated type (`spec.resources`).
        resource: TypeRef,
        /// The attachment types (`spec.attachments`), in the order
        /// declared.
        attachments: Vec<ChildType>,
    },
}
