//! `?labelSelector=` and `?fieldSelector=` as the API server reads them.
//! Matching is kube-core's `Selector`; label selector text is parsed by the
//! driver's `selector::text` (the driver reads `--shard-selector` with it),
//! field selectors here. Each requirement is checked against every record
//! on a worker thread, so a selector is bounded: [`MAX_SELECTOR_BYTES`] and
//! [`MAX_REQUIREMENTS`] (a URL holds about 60,000 terms otherwise).

use crate::object::Reconcile;
use kube::core::{Selector, SelectorExt};

pub use metahook_driver::decide::selector::text::{
    MAX_REQUIREMENTS, MAX_SELECTOR_BYTES, labels, too_many, within_bounds,
};

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
    within_bounds("field", text)?;
    if text.split(',').filter(|t| !t.trim().is_empty()).count() > MAX_REQUIREMENTS {
        return Err(too_many("field"));
    }
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
    use metahook_driver::observe::records::Outcome;

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

    #[test]
    fn selectors_are_bounded_and_the_answer_says_the_bound() {
        let at_most = vec!["team!=db"; MAX_REQUIREMENTS].join(",");
        assert!(matches(&web(), &labels(&at_most).unwrap(), &[]));
        let one_more = vec!["team!=db"; MAX_REQUIREMENTS + 1].join(",");
        let err = labels(&one_more).unwrap_err();
        assert!(err.contains("at most 100 are accepted"), "{err}");
        // About 60,000 terms fit in a URL: refused on its length first.
        let url_full = vec!["a"; 60_000].join(",");
        let err = labels(&url_full).unwrap_err();
        assert!(err.contains("at most 8192 are accepted"), "{err}");
        let err = fields(&vec!["metadata.name!=x"; MAX_REQUIREMENTS + 1].join(",")).unwrap_err();
        assert!(err.contains("more than 100 requirements"), "{err}");
        assert!(fields(&"metadata.name=x,".repeat(600)).is_err());
        // Keys and values as long as labels may be.
        let long_value = format!("team={}", "v".repeat(64));
        assert!(
            labels(&long_value)
                .unwrap_err()
                .contains("no more than 63 bytes")
        );
        assert!(labels(&format!("team in (web,{})", "v".repeat(64))).is_err());
        assert!(labels(&format!("{}=x", "k".repeat(318))).is_err());
        assert!(labels(&format!("team={}", "v".repeat(63))).is_ok());
    }
}
