//! A `Reconcile`: one parent's reconcile record as a Kubernetes object.
//! Its name is `<controller>.<parent name>` in the parent's namespace (one
//! parent may be driven by several controllers); its labels are the
//! parent's, plus the controller's name under [`CONTROLLER_LABEL`]; the
//! record itself is its `status` (nothing in it is desired state).

use crate::resource::{GROUP_VERSION, KIND, LIST_KIND};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ListMeta, ObjectMeta};
use metahook_driver::observe::records::{Outcome, Record};
use schemars::JsonSchema;
use serde::Serialize;

/// Selects the reconciles of one controller: `kubectl get reconciles -l
/// driver.metahook.dev/controller=hello`.
pub const CONTROLLER_LABEL: &str = "driver.metahook.dev/controller";

/// What the driver last did to one parent, and why. Kept in the leading
/// driver's memory, one per live parent; gone with the parent.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "Reconcile")]
pub struct Reconcile {
    /// `driver.metahook.dev/v1alpha1`.
    pub api_version: &'static str,
    /// `Reconcile`.
    pub kind: &'static str,
    /// `<controller>.<parent name>`, in the parent's namespace, with the
    /// parent's labels and the controller's name as a label.
    pub metadata: ObjectMeta,
    /// The record of the last reconcile.
    pub status: Record,
}

/// `kubectl get reconciles -o json`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "ReconcileList")]
pub struct ReconcileList {
    pub api_version: &'static str,
    pub kind: &'static str,
    pub metadata: ListMeta,
    pub items: Vec<Reconcile>,
}

impl ReconcileList {
    pub fn new(items: Vec<Reconcile>) -> Self {
        ReconcileList {
            api_version: GROUP_VERSION,
            kind: LIST_KIND,
            metadata: ListMeta::default(),
            items,
        }
    }
}

impl Reconcile {
    /// The object of a record; `None` for a parent with no namespace (a
    /// namespaced resource cannot show it: `/debug/driver` does).
    pub fn of(record: Record) -> Option<Self> {
        let namespace = record.parent.namespace.clone()?;
        let mut labels = record.parent.labels.clone();
        labels.insert(CONTROLLER_LABEL.to_owned(), record.controller.clone());
        Some(Reconcile {
            api_version: GROUP_VERSION,
            kind: KIND,
            metadata: ObjectMeta {
                name: Some(name_of(&record.controller, &record.parent.name)),
                namespace: Some(namespace),
                labels: Some(labels),
                ..ObjectMeta::default()
            },
            status: record,
        })
    }

    pub fn name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or_default()
    }

    /// One line on why it ended as it did: the error of a failure, else
    /// the first condition the hook reported as not `True` with a message,
    /// else what was written.
    pub fn message(&self) -> String {
        let record = &self.status;
        if let Some(error) = &record.error {
            return error.clone();
        }
        if let Some(c) = record
            .conditions
            .iter()
            .find(|c| c.status != "True" && c.message.is_some())
        {
            let reason = c
                .reason
                .as_deref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default();
            return format!(
                "{}{reason}: {}",
                c.type_,
                c.message.as_deref().unwrap_or_default()
            );
        }
        let writes: Vec<String> = record
            .plan
            .iter()
            .filter(|s| s.op != "verifyParent" && s.op != "event")
            .filter(|s| !(s.op == "apply" && s.detail.as_deref() == Some("no field changes")))
            .map(|s| match (&s.kind, &s.name) {
                (Some(kind), Some(name)) => format!("{} {kind}/{name}", s.op),
                _ => s.op.to_owned(),
            })
            .collect();
        match (record.outcome, writes.is_empty()) {
            (Outcome::Unchanged, _) | (_, true) => "nothing to change".to_owned(),
            _ => writes.join(", "),
        }
    }
}

/// `<controller>.<parent name>`: controller names are DNS labels (no dot),
/// so the first dot splits it back.
pub fn name_of(controller: &str, parent: &str) -> String {
    format!("{controller}.{parent}")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use metahook_driver::observe::records::{ChildCount, Condition, ParentRef, Step};
    use std::collections::BTreeMap;

    /// A record of `controller` for parent `name` in `namespace`.
    pub(crate) fn record(controller: &str, namespace: &str, name: &str) -> Record {
        Record {
            controller: controller.to_owned(),
            parent: ParentRef {
                api_version: "fraim.co.jp/v1".to_owned(),
                kind: "Hello".to_owned(),
                namespace: Some(namespace.to_owned()),
                name: name.to_owned(),
                uid: format!("uid-{name}"),
                generation: Some(2),
                labels: BTreeMap::from([("team".to_owned(), "web".to_owned())]),
            },
            last_run: "2026-11-23T10:00:00Z".to_owned(),
            outcome: Outcome::Succeeded,
            duration_seconds: 0.0123,
            hook_seconds: Some(0.0001),
            plan: Vec::new(),
            error: None,
            requeue: None,
            children: ChildCount {
                desired: Some(1),
                observed: 1,
            },
            conditions: Vec::new(),
            trace_id: None,
            revision: Some("0.2.0".to_owned()),
        }
    }

    fn step(op: &'static str, target: Option<(&str, &str)>) -> Step {
        Step {
            op,
            kind: target.map(|t| t.0.to_owned()),
            namespace: None,
            name: target.map(|t| t.1.to_owned()),
            changed: Vec::new(),
            detail: None,
        }
    }

    #[test]
    fn a_record_becomes_a_namespaced_object_named_after_controller_and_parent() {
        let object = Reconcile::of(record("hello", "shop", "web")).unwrap();
        assert_eq!(object.name(), "hello.web");
        assert_eq!(object.metadata.namespace.as_deref(), Some("shop"));
        let labels = object.metadata.labels.clone().unwrap();
        assert_eq!(labels.get("team").map(String::as_str), Some("web"));
        assert_eq!(
            labels.get(CONTROLLER_LABEL).map(String::as_str),
            Some("hello")
        );
        let json = serde_json::to_value(&object).unwrap();
        assert_eq!(json["apiVersion"], "driver.metahook.dev/v1alpha1");
        assert_eq!(json["kind"], "Reconcile");
        assert_eq!(json["status"]["parent"]["kind"], "Hello");
        let mut cluster_scoped = record("hello", "x", "web");
        cluster_scoped.parent.namespace = None;
        assert!(Reconcile::of(cluster_scoped).is_none());
    }

    #[test]
    fn the_message_says_why_first_then_what_was_written() {
        let mut r = record("hello", "shop", "web");
        r.plan = vec![
            step("verifyParent", None),
            step("apply", Some(("Deployment", "web"))),
            step("writeStatus", None),
        ];
        assert_eq!(
            Reconcile::of(r.clone()).unwrap().message(),
            "apply Deployment/web, writeStatus"
        );
        r.conditions = vec![Condition {
            type_: "SpecValid".to_owned(),
            status: "False".to_owned(),
            reason: Some("InvalidSpec".to_owned()),
            message: Some("replicas must be 0 to 20".to_owned()),
        }];
        assert_eq!(
            Reconcile::of(r.clone()).unwrap().message(),
            "SpecValid (InvalidSpec): replicas must be 0 to 20"
        );
        r.error = Some("the sync hook failed: 500".to_owned());
        assert_eq!(
            Reconcile::of(r.clone()).unwrap().message(),
            "the sync hook failed: 500"
        );
        let mut quiet = record("hello", "shop", "web");
        quiet.outcome = Outcome::Unchanged;
        assert_eq!(Reconcile::of(quiet).unwrap().message(), "nothing to change");
    }
}
