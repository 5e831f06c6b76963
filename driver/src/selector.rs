//! Label selectors (`matchLabels` + `matchExpressions`), evaluated the way
//! the API server does.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selector {
    requirements: Vec<Requirement>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Requirement {
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    DoesNotExist(String),
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

impl Selector {
    /// `controller-uid = <uid>`, as with `generateSelector: true`.
    pub fn controller_uid(uid: &str) -> Self {
        Selector {
            requirements: vec![Requirement::In(
                CONTROLLER_UID.to_owned(),
                vec![uid.to_owned()],
            )],
        }
    }

    /// An empty selector matches everything.
    pub fn from_label_selector(selector: &LabelSelector) -> Result<Self, SelectorError> {
        let mut requirements: Vec<Requirement> = selector
            .match_labels
            .iter()
            .flatten()
            .map(|(k, v)| Requirement::In(k.clone(), vec![v.clone()]))
            .collect();
        for expr in selector.match_expressions.iter().flatten() {
            let values = expr.values.clone().unwrap_or_default();
            let key = expr.key.clone();
            let operator = expr.operator.clone();
            let requirement = match operator.as_str() {
                "In" | "NotIn" if values.is_empty() => {
                    return Err(SelectorError::NoValues { key, operator });
                }
                "Exists" | "DoesNotExist" if !values.is_empty() => {
                    return Err(SelectorError::Values { key, operator });
                }
                "In" => Requirement::In(key, values),
                "NotIn" => Requirement::NotIn(key, values),
                "Exists" => Requirement::Exists(key),
                "DoesNotExist" => Requirement::DoesNotExist(key),
                _ => return Err(SelectorError::Operator { key, operator }),
            };
            requirements.push(requirement);
        }
        Ok(Selector { requirements })
    }

    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| match r {
            Requirement::In(k, vs) => labels.get(k).is_some_and(|v| vs.contains(v)),
            Requirement::NotIn(k, vs) => labels.get(k).is_none_or(|v| !vs.contains(v)),
            Requirement::Exists(k) => labels.contains_key(k),
            Requirement::DoesNotExist(k) => !labels.contains_key(k),
        })
    }
}

/// The label `generateSelector` puts on every child.
pub const CONTROLLER_UID: &str = "controller-uid";

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

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
        let selector = Selector::from_label_selector(&LabelSelector {
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
        let selector = Selector::from_label_selector(&LabelSelector::default()).unwrap();
        assert!(selector.is_empty());
        assert!(selector.matches(&labels(&[])));
    }

    #[test]
    fn controller_uid() {
        let s = Selector::controller_uid("u1");
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
            assert!(Selector::from_label_selector(&s).is_err(), "{op}");
        }
    }
}
