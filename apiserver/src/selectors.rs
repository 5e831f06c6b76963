//! `?labelSelector=` and `?fieldSelector=` as the API server reads them.
//! Matching is kube-core's `Selector`; kube-core parses selectors from a
//! `LabelSelector` object but not from the query string's text, so that
//! parser is here.

use crate::object::Reconcile;
use kube::core::{Expression, Selector, SelectorExt};
use std::collections::BTreeSet;

/// A label selector's text (`a=b,c!=d,e in (x,y),f notin (z),g,!h`).
pub fn labels(text: &str) -> Result<Selector, String> {
    let mut expressions = Vec::new();
    for term in split_terms(text)? {
        let term = term.trim();
        if term.is_empty() {
            continue;
        }
        expressions.push(term_expression(term)?);
    }
    Ok(Selector::from_iter(expressions))
}

/// Splits on the commas outside parentheses.
fn split_terms(text: &str) -> Result<Vec<&str>, String> {
    let (mut terms, mut depth, mut start) = (Vec::new(), 0u32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth = depth
                    .checked_sub(1)
                    .ok_or_else(|| format!("unbalanced ')' in label selector {text:?}"))?
            }
            ',' if depth == 0 => {
                terms.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(format!("unbalanced '(' in label selector {text:?}"));
    }
    terms.push(&text[start..]);
    Ok(terms)
}

fn term_expression(term: &str) -> Result<Expression, String> {
    let invalid = || format!("invalid label selector term {term:?}");
    if let Some(k) = term.strip_prefix('!') {
        return Ok(Expression::DoesNotExist(key(k.trim())?));
    }
    for (op, negated) in [(" notin ", true), (" in ", false)] {
        if let Some((k, set)) = term.split_once(op) {
            let set = set
                .trim()
                .strip_prefix('(')
                .and_then(|s| s.strip_suffix(')'))
                .ok_or_else(invalid)?;
            let values: BTreeSet<String> = set
                .split(',')
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
                .collect();
            if values.is_empty() {
                return Err(format!("{term:?}: a set needs at least one value"));
            }
            let k = key(k.trim())?;
            return Ok(if negated {
                Expression::NotIn(k, values)
            } else {
                Expression::In(k, values)
            });
        }
    }
    for (op, equal) in [("!=", false), ("==", true), ("=", true)] {
        if let Some((k, v)) = term.split_once(op) {
            let (k, v) = (key(k.trim())?, v.trim().to_owned());
            return Ok(if equal {
                Expression::Equal(k, v)
            } else {
                Expression::NotEqual(k, v)
            });
        }
    }
    Ok(Expression::Exists(key(term)?))
}

fn key(k: &str) -> Result<String, String> {
    let valid = !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'));
    if valid {
        Ok(k.to_owned())
    } else {
        Err(format!("invalid label key {k:?}"))
    }
}

/// One `field=value` / `field==value` / `field!=value` of a field selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldTerm {
    field: Field,
    value: String,
    equal: bool,
}

/// The fields a reconcile can be selected by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Name,
    Namespace,
    Controller,
    Outcome,
}

/// A field selector's text: `metadata.name`, `metadata.namespace`,
/// `status.controller` and `status.outcome`; any other field is refused as
/// the API server refuses it.
pub fn fields(text: &str) -> Result<Vec<FieldTerm>, String> {
    text.split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|term| {
            let (name, value, equal) = if let Some((n, v)) = term.split_once("!=") {
                (n, v, false)
            } else if let Some((n, v)) = term.split_once("==") {
                (n, v, true)
            } else if let Some((n, v)) = term.split_once('=') {
                (n, v, true)
            } else {
                return Err(format!("invalid field selector term {term:?}"));
            };
            let field = match name.trim() {
                "metadata.name" => Field::Name,
                "metadata.namespace" => Field::Namespace,
                "status.controller" => Field::Controller,
                "status.outcome" => Field::Outcome,
                other => {
                    return Err(format!(
                        "field label not supported: {other} (reconciles are selected by metadata.name, metadata.namespace, status.controller and status.outcome)"
                    ));
                }
            };
            Ok(FieldTerm {
                field,
                value: value.trim().to_owned(),
                equal,
            })
        })
        .collect()
}

/// Whether `object` has every label of `labels` and every field of
/// `fields`.
pub fn matches(object: &Reconcile, labels: &Selector, fields: &[FieldTerm]) -> bool {
    let no_labels = Default::default();
    let object_labels = object.metadata.labels.as_ref().unwrap_or(&no_labels);
    labels.matches(object_labels)
        && fields.iter().all(|t| {
            let outcome;
            let actual = match t.field {
                Field::Name => object.name(),
                Field::Namespace => object.metadata.namespace.as_deref().unwrap_or_default(),
                Field::Controller => object.status.controller.as_str(),
                Field::Outcome => {
                    outcome = serde_json::to_value(object.status.outcome).unwrap_or_default();
                    outcome.as_str().unwrap_or_default()
                }
            };
            (actual == t.value) == t.equal
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::tests::record;
    use metahook_driver::records::Outcome;

    fn web() -> Reconcile {
        Reconcile::of(record("hello", "shop", "web")).unwrap()
    }

    #[test]
    fn label_selectors_read_as_kubectl_writes_them() {
        let yes = [
            "",
            "team=web",
            "team==web",
            "team!=db",
            "team in (web,db)",
            "team notin (db)",
            "team",
            "!owner",
            "team=web,driver.metahook.dev/controller=hello",
            "team in (web, db),!owner",
        ];
        for text in yes {
            let selector = labels(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert!(matches(&web(), &selector, &[]), "{text} should select");
        }
        for text in [
            "team=db",
            "team!=web",
            "team in (db)",
            "team notin (web)",
            "owner",
            "!team",
        ] {
            assert!(
                !matches(&web(), &labels(text).unwrap(), &[]),
                "{text} should not select"
            );
        }
        for bad in [
            "team in (web",
            "team in ()",
            "te am=web",
            "team in web",
            "=web",
        ] {
            assert!(labels(bad).is_err(), "{bad} should be refused");
        }
    }

    #[test]
    fn field_selectors_know_name_namespace_controller_and_outcome() {
        let all = Selector::default();
        for text in [
            "metadata.name=hello.web",
            "metadata.namespace==shop",
            "status.controller=hello",
            "status.outcome=Succeeded",
            "metadata.name!=hello.db",
        ] {
            assert!(matches(&web(), &all, &fields(text).unwrap()), "{text}");
        }
        assert!(!matches(
            &web(),
            &all,
            &fields("metadata.name=hello.db").unwrap()
        ));
        let mut failed = record("hello", "shop", "web");
        failed.outcome = Outcome::Failed;
        let failed = Reconcile::of(failed).unwrap();
        assert!(matches(
            &failed,
            &all,
            &fields("status.outcome=Failed").unwrap()
        ));
        let err = fields("spec.replicas=3").unwrap_err();
        assert!(
            err.starts_with("field label not supported: spec.replicas"),
            "{err}"
        );
        assert!(fields("metadata.name").is_err());
    }
}
