//! What a hook can be given: a type of object, by kind and API version.
//!
//! Any Kubernetes type is one (k8s-openapi's `Deployment`, a
//! `#[derive(CustomResource)]` of yours): it names its own kind, API
//! version and plural. A *view* — a struct of your own that deserializes
//! only the fields a hook reads, and skips the rest of what Metacontroller
//! sends (whole objects, `managedFields` and all) — implements [`Object`]
//! by hand and is decoded several times faster.

use std::borrow::Cow;

/// A type of object: what a manifest names and a request's
/// `Kind.apiVersion` groups say.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TypeRef {
    /// `group/version`, or `version` for the core group.
    pub api_version: Cow<'static, str>,
    /// The kind, as objects name it in `kind`: `Deployment`.
    pub kind: Cow<'static, str>,
    /// The resource's plural, as its URL and RBAC name it.
    pub plural: Cow<'static, str>,
    /// Whether its objects live in a namespace.
    pub namespaced: bool,
}

/// Whether a Kubernetes resource scope is a namespace's.
pub trait Scope {
    /// Whether objects of this scope live in a namespace.
    const NAMESPACED: bool;
}

impl Scope for k8s_openapi::NamespaceResourceScope {
    const NAMESPACED: bool = true;
}

impl Scope for k8s_openapi::ClusterResourceScope {
    const NAMESPACED: bool = false;
}

impl TypeRef {
    /// A namespaced type.
    pub const fn new(api_version: &'static str, kind: &'static str, plural: &'static str) -> Self {
        TypeRef {
            api_version: Cow::Borrowed(api_version),
            kind: Cow::Borrowed(kind),
            plural: Cow::Borrowed(plural),
            namespaced: true,
        }
    }

    /// The same type, cluster-scoped.
    pub fn cluster_scoped(self) -> Self {
        TypeRef {
            namespaced: false,
            ..self
        }
    }

    /// The type of a Kubernetes resource type.
    pub fn of<K>() -> Self
    where
        K: kube::Resource<DynamicType = ()>,
        K::Scope: Scope,
    {
        TypeRef {
            api_version: Cow::Owned(K::api_version(&()).into_owned()),
            kind: Cow::Owned(K::kind(&()).into_owned()),
            plural: Cow::Owned(K::plural(&()).into_owned()),
            namespaced: <K::Scope as Scope>::NAMESPACED,
        }
    }

    /// The API group (empty for the core group).
    pub fn group(&self) -> &str {
        self.api_version
            .rsplit_once('/')
            .map_or("", |(group, _)| group)
    }

    /// The key of this type's objects in a request: `Kind.apiVersion`.
    pub fn group_key(&self) -> String {
        format!("{}.{}", self.kind, self.api_version)
    }
}

/// The most objects of one type a request may hold unless a type says
/// otherwise: past it the request is refused (422), since what a hook
/// builds grows with them (docs/robustness.md, "Hostile shapes").
pub const DEFAULT_MAX_OBJECTS: usize = 10_000;

/// A type of object a request may carry as a child, an attachment or a
/// related object, decoded from its `Kind.apiVersion` group.
pub trait Object: serde::de::DeserializeOwned + 'static {
    /// The type, as manifests name it.
    fn type_ref() -> TypeRef;

    /// The Kubernetes types whose objects this type reads: by default its
    /// own. A view that reads several kinds (one type for a Zundoko and a
    /// Kiyoshi) names each, so that a controller whose hook reads it
    /// declares each as a child type; its [`Object::accepts`] takes them.
    fn type_refs() -> Vec<TypeRef> {
        vec![Self::type_ref()]
    }

    /// Whether the objects of a request's group (`kind`, `api_version`)
    /// are decoded as this type: by default, its own kind and version.
    fn accepts(kind: &str, api_version: &str) -> bool {
        let own = Self::type_ref();
        own.kind == kind && own.api_version == api_version
    }

    /// At most this many of this type in one request.
    const MAX: usize = DEFAULT_MAX_OBJECTS;

    /// `metadata.name`.
    fn name(&self) -> &str;

    /// `metadata.namespace`, if it has one.
    fn namespace(&self) -> Option<&str>;
}

impl<K> Object for K
where
    K: kube::Resource<DynamicType = ()> + serde::de::DeserializeOwned + 'static,
    K::Scope: Scope,
{
    fn type_ref() -> TypeRef {
        TypeRef::of::<K>()
    }

    fn name(&self) -> &str {
        self.meta().name.as_deref().unwrap_or_default()
    }

    fn namespace(&self) -> Option<&str> {
        self.meta().namespace.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::ConfigMap;

    #[test]
    fn kubernetes_types_name_themselves() {
        let deployments = Deployment::type_ref();
        assert_eq!(
            deployments,
            TypeRef::new("apps/v1", "Deployment", "deployments")
        );
        assert_eq!(deployments.group(), "apps");
        assert_eq!(deployments.group_key(), "Deployment.apps/v1");
        assert_eq!(ConfigMap::type_ref().group(), "");
        assert!(ConfigMap::type_ref().namespaced);
        assert!(!k8s_openapi::api::core::v1::Namespace::type_ref().namespaced);
        assert_eq!(ConfigMap::type_ref().group_key(), "ConfigMap.v1");
        assert!(Deployment::accepts("Deployment", "apps/v1"));
        assert!(!Deployment::accepts("Deployment", "apps/v1beta1"));
        assert!(!Deployment::accepts("ReplicaSet", "apps/v1"));
    }
}
