//! Related objects from customize rules (docs/metacontroller.md §1.6),
//! selected from cached objects: pure.

use crate::config::HookVersion;
use crate::decide::selector::{self, Labelled, SelectorError, SelectorExt};
use kube::Resource;
use metahook_core::protocol::RelatedResourceRule;
use std::sync::Arc;

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum RelatedError {
    #[error("related rule {index}: names cannot be combined with a selector")]
    NamesWithSelector { index: usize },
    #[error("related rule {index}: namespace cannot be combined with namespaceSelector")]
    NamespaceWithNamespaceSelector { index: usize },
    #[error(
        "related rule {index}: a v1 customize hook of a namespaced parent can only select in the parent's namespace"
    )]
    OtherNamespaceInV1 { index: usize },
    #[error(
        "related rule {index}: namespaceSelector needs a v2 customize hook for a namespaced parent"
    )]
    NamespaceSelectorInV1 { index: usize },
    #[error("related rule {index}: the selector is invalid")]
    Selector {
        index: usize,
        #[source]
        source: SelectorError,
    },
}

/// Where a rule's objects may come from.
pub struct Scope<'a> {
    /// The customize hook's version.
    pub version: HookVersion,
    /// `Some(ns)` for a namespaced parent.
    pub parent_namespace: Option<&'a str>,
    /// Whether the rule's resource is namespaced.
    pub resource_namespaced: bool,
}

/// The objects of `objects` (every cached object of the rule's type) that
/// `rule` selects; `namespaces` is every cached Namespace, for
/// `namespaceSelector`.
pub fn select<K: Resource + Labelled>(
    index: usize,
    rule: &RelatedResourceRule,
    scope: &Scope<'_>,
    objects: &[Arc<K>],
    namespaces: &[Arc<K>],
) -> Result<Vec<Arc<K>>, RelatedError> {
    let has_names = rule.names.as_ref().is_some_and(|n| !n.is_empty());
    if has_names && (rule.label_selector.is_some() || rule.namespace_selector.is_some()) {
        return Err(RelatedError::NamesWithSelector { index });
    }
    if rule.namespace.is_some() && rule.namespace_selector.is_some() {
        return Err(RelatedError::NamespaceWithNamespaceSelector { index });
    }
    let sel = |s: &k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector| {
        selector::parse(s).map_err(|source| RelatedError::Selector { index, source })
    };
    // v1 + namespaced parent + namespaced resource: confined to the
    // parent's namespace.
    let confined = match (scope.version, scope.parent_namespace) {
        (HookVersion::V1, Some(ns)) if scope.resource_namespaced => Some(ns),
        _ => None,
    };
    if let Some(ns) = confined {
        if rule.namespace.as_deref().is_some_and(|r| r != ns) {
            return Err(RelatedError::OtherNamespaceInV1 { index });
        }
        if rule.namespace_selector.is_some() {
            return Err(RelatedError::NamespaceSelectorInV1 { index });
        }
    }
    let namespace = rule.namespace.as_deref().or(confined);
    let in_namespace = |o: &K| {
        !scope.resource_namespaced
            || namespace.is_none_or(|ns| o.meta().namespace.as_deref() == Some(ns))
    };
    let selected: Vec<Arc<K>> = if let Some(ns_selector) = &rule.namespace_selector {
        let ns_selector = sel(ns_selector)?;
        let label_selector = rule.label_selector.as_ref().map(sel).transpose()?;
        let chosen: Vec<&str> = namespaces
            .iter()
            .filter(|n| ns_selector.matches(&n.label_map()))
            .filter_map(|n| n.meta().name.as_deref())
            .collect();
        objects
            .iter()
            .filter(|o| {
                o.meta()
                    .namespace
                    .as_deref()
                    .is_some_and(|ns| chosen.contains(&ns))
            })
            .filter(|o| {
                label_selector
                    .as_ref()
                    .is_none_or(|s| s.matches(&o.label_map()))
            })
            .cloned()
            .collect()
    } else if let Some(label_selector) = rule.label_selector.as_ref().filter(|_| !has_names) {
        let label_selector = sel(label_selector)?;
        objects
            .iter()
            .filter(|o| in_namespace(o) && label_selector.matches(&o.label_map()))
            .cloned()
            .collect()
    } else if rule.namespace.is_some() || has_names {
        let names = rule.names.clone().unwrap_or_default();
        objects
            .iter()
            .filter(|o| in_namespace(o))
            .filter(|o| {
                names.is_empty() || o.meta().name.as_ref().is_some_and(|n| names.contains(n))
            })
            .cloned()
            .collect()
    } else {
        // No selector at all: every object of the type (in scope).
        objects
            .iter()
            .filter(|o| in_namespace(o))
            .cloned()
            .collect()
    };
    Ok(selected)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::ResourceExt;
    use kube::core::DynamicObject;
    use kube::core::{ApiResource, GroupVersionKind};
    use serde_json::json;

    fn obj(ns: Option<&str>, name: &str, labels: &[(&str, &str)]) -> Arc<DynamicObject> {
        let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", "ConfigMap"));
        let mut o = DynamicObject::new(name, &ar);
        o.metadata.namespace = ns.map(str::to_owned);
        o.metadata.labels = Some(
            labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        );
        Arc::new(o)
    }

    fn rule(value: serde_json::Value) -> RelatedResourceRule {
        serde_json::from_value(value).unwrap()
    }

    fn names(objs: &[Arc<DynamicObject>]) -> Vec<String> {
        objs.iter()
            .map(|o| {
                format!(
                    "{}/{}",
                    o.namespace().unwrap_or_default(),
                    o.metadata.name.clone().unwrap()
                )
            })
            .collect()
    }

    fn all() -> Vec<Arc<DynamicObject>> {
        vec![
            obj(Some("shop"), "a", &[("app", "web")]),
            obj(Some("shop"), "b", &[]),
            obj(Some("other"), "a", &[("app", "web")]),
        ]
    }

    const V2: Scope<'static> = Scope {
        version: HookVersion::V2,
        parent_namespace: Some("shop"),
        resource_namespaced: true,
    };
    const V1: Scope<'static> = Scope {
        version: HookVersion::V1,
        parent_namespace: Some("shop"),
        resource_namespaced: true,
    };

    #[test]
    fn names_in_a_namespace() {
        let r = rule(
            json!({"apiVersion": "v1", "resource": "configmaps", "namespace": "shop", "names": ["a"]}),
        );
        assert_eq!(names(&select(0, &r, &V2, &all(), &[]).unwrap()), ["shop/a"]);
        // v2 without a namespace: every namespace.
        let r = rule(json!({"apiVersion": "v1", "resource": "configmaps", "names": ["a"]}));
        assert_eq!(
            names(&select(0, &r, &V2, &all(), &[]).unwrap()),
            ["shop/a", "other/a"]
        );
        // v1: confined to the parent's namespace.
        assert_eq!(names(&select(0, &r, &V1, &all(), &[]).unwrap()), ["shop/a"]);
    }

    #[test]
    fn label_selectors_and_namespace_selectors() {
        let r = rule(
            json!({"apiVersion": "v1", "resource": "configmaps", "labelSelector": {"matchLabels": {"app": "web"}}}),
        );
        assert_eq!(
            names(&select(0, &r, &V2, &all(), &[]).unwrap()),
            ["shop/a", "other/a"]
        );
        let namespaces = vec![obj(None, "shop", &[("team", "x")]), obj(None, "other", &[])];
        let r = rule(
            json!({"apiVersion": "v1", "resource": "configmaps", "namespaceSelector": {"matchLabels": {"team": "x"}}}),
        );
        assert_eq!(
            names(&select(0, &r, &V2, &all(), &namespaces).unwrap()),
            ["shop/a", "shop/b"]
        );
        assert_eq!(
            select(0, &r, &V1, &all(), &namespaces),
            Err(RelatedError::NamespaceSelectorInV1 { index: 0 })
        );
    }

    #[test]
    fn invalid_rules() {
        let r = rule(
            json!({"apiVersion": "v1", "resource": "configmaps", "names": ["a"], "labelSelector": {}}),
        );
        assert_eq!(
            select(3, &r, &V2, &all(), &[]),
            Err(RelatedError::NamesWithSelector { index: 3 })
        );
        let r = rule(json!({"apiVersion": "v1", "resource": "configmaps", "namespace": "other"}));
        assert_eq!(
            select(0, &r, &V1, &all(), &[]),
            Err(RelatedError::OtherNamespaceInV1 { index: 0 })
        );
    }
}
