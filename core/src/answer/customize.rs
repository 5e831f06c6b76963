//! A `customize` answer: which related objects to send with each sync.

use crate::object::Object;
use crate::protocol::{CustomizeResponse, RelatedResourceRule};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// A `customize` answer: the rules selecting the related objects sent
/// with each sync of this parent.
pub type CustomizeAnswer = CustomizeResponse;

impl CustomizeResponse {
    /// No related objects.
    pub fn none() -> Self {
        CustomizeResponse {
            related_resources: Vec::new(),
        }
    }

    /// The objects these rules select, sent with each sync.
    pub fn rules(rules: impl IntoIterator<Item = RelatedResourceRule>) -> Self {
        CustomizeResponse {
            related_resources: rules.into_iter().collect(),
        }
    }

    /// One more rule.
    pub fn rule(mut self, rule: RelatedResourceRule) -> Self {
        self.related_resources.push(rule);
        self
    }
}

impl RelatedResourceRule {
    /// The objects of type `T` — every one, until narrowed: by name, by
    /// namespace, by label. The type names its own API version and
    /// resource, so a misspelt plural cannot select nothing silently.
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use metahook_core::{CustomizeAnswer, RelatedResourceRule};
    /// use serde_json::json;
    ///
    /// let answer = CustomizeAnswer::rules([RelatedResourceRule::of::<ConfigMap>()
    ///     .in_namespace("shop")
    ///     .named(["settings"])]);
    /// assert_eq!(
    ///     serde_json::to_value(&answer)?,
    ///     json!({"relatedResources": [
    ///         {"apiVersion": "v1", "resource": "configmaps", "namespace": "shop", "names": ["settings"]},
    ///     ]})
    /// );
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn of<T: Object>() -> Self {
        let type_ref = T::type_ref();
        RelatedResourceRule {
            api_version: type_ref.api_version.into_owned(),
            resource: type_ref.plural.into_owned(),
            // `{}`: every object, said outright (a rule with no selector
            // selects every object too: docs/metacontroller.md §1.6).
            label_selector: Some(LabelSelector::default()),
            ..RelatedResourceRule::default()
        }
    }

    /// Only the objects of these names (no label selector with names).
    pub fn named<N: Into<String>>(mut self, names: impl IntoIterator<Item = N>) -> Self {
        self.names = Some(names.into_iter().map(Into::into).collect());
        self.label_selector = None;
        self
    }

    /// Only those in `namespace`.
    pub fn in_namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// Only those with these labels.
    pub fn labelled(mut self, selector: LabelSelector) -> Self {
        self.label_selector = Some(selector);
        self.names = None;
        self
    }

    /// Only those in namespaces with these labels.
    pub fn in_namespaces_labelled(mut self, selector: LabelSelector) -> Self {
        self.namespace_selector = Some(selector);
        self
    }
}
