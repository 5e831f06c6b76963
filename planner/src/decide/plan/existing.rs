//! Where a desired child's name is looked up before it is created: an
//! object of that name this parent does not own is left alone, as
//! Metacontroller's create meets `AlreadyExists`. The driver looks names up
//! in its caches; the preview and tests in the objects they list.

use kube::core::DynamicObject;
use std::sync::Arc;

/// The cached objects of each child type, by `type_index`, found by name.
pub trait Existing {
    /// Whether an object `namespace`/`name` of child type `type_index` is
    /// cached (`namespace` is `None` for a cluster-scoped type).
    fn holds(&self, type_index: usize, namespace: Option<&str>, name: &str) -> bool;
}

/// Objects listed per child type.
impl Existing for [Vec<Arc<DynamicObject>>] {
    fn holds(&self, type_index: usize, namespace: Option<&str>, name: &str) -> bool {
        self.get(type_index).is_some_and(|objects| {
            objects.iter().any(|o| {
                o.metadata.name.as_deref() == Some(name)
                    && o.metadata.namespace.as_deref().filter(|ns| !ns.is_empty()) == namespace
            })
        })
    }
}
