//! Label selectors. kube-core's `Selector` holds and evaluates them; what
//! this module adds are the checks the API server makes and kube-core's
//! conversion does not (`In`/`NotIn` with an empty list, `Exists`/
//! `DoesNotExist` with values), so a selector the API server would refuse is
//! refused here too, naming the key and the operator.

pub mod text;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::core::{DynamicObject, Expression};
pub use kube::core::{Selector, SelectorExt};
use std::borrow::Cow;
use std::collections::BTreeMap;

/// An object whose labels a selector reads: a decoded object lends its
/// own, a cached one decodes them from the text it keeps
/// (`controller::cache::CachedObject`). Code that takes either kind reads
/// labels through this, never `ResourceExt::labels`, which finds none on a
/// cached object.
pub trait Labelled {
    fn label_map(&self) -> Cow<'_, BTreeMap<String, String>>;
}

impl Labelled for DynamicObject {
    fn label_map(&self) -> Cow<'_, BTreeMap<String, String>> {
        self.metadata
            .labels
            .as_ref()
            .map_or_else(|| Cow::Owned(BTreeMap::new()), Cow::Borrowed)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    #[error("operator {operator:?} on key {key:?} is not In, NotIn, Exists or DoesNotExist")]
    Operator { key: String, operator: String },
    #[error("operator {operator} on key {key:?} needs at least one value")]
    NoValues { key: String, operator: String },
    #[error("operator {operator} on key {key:?} takes no values")]
    Values { key: String, operator: String },
}

/// `controller-uid = <uid>`, as with `generateSelector: true`.
pub fn controller_uid(uid: &str) -> Selector {
    Expression::Equal(CONTROLLER_UID.to_owned(), uid.to_owned()).into()
}

/// A `LabelSelector` checked as the API server checks it. An empty one
/// selects everything.
pub fn parse(selector: &LabelSelector) -> Result<Selector, SelectorError> {
    for expr in selector.match_expressions.iter().flatten() {
        let has_values = expr.values.as_ref().is_some_and(|v| !v.is_empty());
        let error = match expr.operator.as_str() {
            "In" | "NotIn" if !has_values => SelectorError::NoValues {
                key: expr.key.clone(),
                operator: expr.operator.clone(),
            },
            "Exists" | "DoesNotExist" if has_values => SelectorError::Values {
                key: expr.key.clone(),
                operator: expr.operator.clone(),
            },
            "In" | "NotIn" | "Exists" | "DoesNotExist" => continue,
            _ => SelectorError::Operator {
                key: expr.key.clone(),
                operator: expr.operator.clone(),
            },
        };
        return Err(error);
    }
    // Every case kube-core refuses was refused above.
    Selector::try_from(selector.clone()).map_err(|e| SelectorError::Operator {
        key: String::new(),
        operator: e.0,
    })
}

/// The label `generateSelector` puts on every child.
pub const CONTROLLER_UID: &str = "controller-uid";

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;
    use std::collections::BTreeMap;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn expr(key: &str, operator: &str, values: &[&str]) -> LabelSelectorRequirement {
        LabelSelectorRequirement {
            key: key.to_owned(),
            operator: operator.to_owned(),
            values: if values.is_empty() {
                None
            } else {
                Some(values.iter().map(|v| (*v).to_owned()).collect())
            },
        }
    }

    #[test]
    fn match_labels_and_expressions() {
        let selector = parse(&LabelSelector {
            match_labels: Some(labels(&[("app", "web")])),
            match_expressions: Some(vec![
                expr("tier", "In", &["a", "b"]),
                expr("legacy", "DoesNotExist", &[]),
                expr("zone", "NotIn", &["x"]),
                expr("team", "Exists", &[]),
            ]),
        })
        .unwrap();
        assert!(selector.matches(&labels(&[("app", "web"), ("tier", "a"), ("team", "t")])));
        assert!(!selector.matches(&labels(&[("app", "web"), ("tier", "c"), ("team", "t")])));
        assert!(!selector.matches(&labels(&[
            ("app", "web"),
            ("tier", "a"),
            ("team", "t"),
            ("legacy", "1")
        ])));
        assert!(!selector.matches(&labels(&[
            ("app", "web"),
            ("tier", "a"),
            ("team", "t"),
            ("zone", "x")
        ])));
        assert!(!selector.matches(&labels(&[("app", "web"), ("tier", "a")])));
    }

    #[test]
    fn empty_matches_everything() {
        let selector = parse(&LabelSelector::default()).unwrap();
        assert!(selector.selects_all());
        assert!(selector.matches(&labels(&[])));
    }

    #[test]
    fn controller_uid_selects_one_parent() {
        let s = controller_uid("u1");
        assert!(s.matches(&labels(&[("controller-uid", "u1")])));
        assert!(!s.matches(&labels(&[("controller-uid", "u2")])));
    }

    #[test]
    fn bad_operators_are_errors() {
        for (op, values) in [("Near", vec!["a"]), ("In", vec![]), ("Exists", vec!["a"])] {
            let s = LabelSelector {
                match_expressions: Some(vec![expr("k", op, &values)]),
                ..Default::default()
            };
            assert!(parse(&s).is_err(), "{op}");
        }
    }
}
