//! A DecoratorController's pass (docs/metacontroller.md §6): its
//! attachments, its edits of the object, its finalizer.

use super::*;
use crate::test_support::{DECORATOR_FINALIZER, decorator};
use crate::wire::decorator::DecoratorAnswer;
use std::collections::BTreeMap;

fn pod() -> Obj {
    Obj::pod().annotation("expose", "").label("app", "web")
}

fn desired_service(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
           "spec": {"ports": [{"port": 80}]}})
}

fn edits(pairs: &[(&str, Option<&str>)]) -> BTreeMap<String, Option<String>> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.map(str::to_owned)))
        .collect()
}

fn decorate_with(
    ctl: &Driven,
    pod: &DynamicObject,
    observed: &[Vec<Arc<DynamicObject>>],
    answer: DecoratorAnswer,
) -> Plan {
    decorate(ctl, pod, observed, UNCACHED, answer, &NoMemory).unwrap()
}

#[test]
fn attachments_are_what_this_decorator_made_for_this_object() {
    let ctl = decorator(false, true);
    let ours = Obj::attachment("web-0")
        .annotation(DECORATOR_ANNOTATION, "svc")
        .arc();
    let other_decorator = Obj::attachment("web-0-b")
        .annotation(DECORATOR_ANNOTATION, "other")
        .arc();
    let orphan = Obj::new(("", "v1", "Service"), "loose")
        .annotation(DECORATOR_ANNOTATION, "svc")
        .arc();
    let candidates = vec![vec![ours.clone(), other_decorator, orphan]];
    let prelude = prelude(&ctl, &pod().build(), &candidates).unwrap();
    // Nothing adopted, nothing released: only what it made is its own.
    assert!(prelude.ops.is_empty());
    assert_eq!(observed_of(&prelude), &vec![vec![ours]]);
    assert_eq!(hook_of(&prelude), HookKind::Sync);
}

#[test]
fn an_object_the_annotation_selector_does_not_select_is_left_alone() {
    let ctl = decorator(true, true);
    let plain = Obj::pod().build();
    assert_eq!(prelude(&ctl, &plain, &[vec![]]).unwrap().next, Next::Stop);
}

#[test]
fn labels_and_annotations_are_edited_key_by_key_null_removing() {
    let ctl = decorator(false, true);
    let pod = pod().annotation("old", "x").build();
    let answer = DecoratorAnswer {
        labels: edits(&[
            ("tier", Some("front")),
            ("example.com/role", Some("db")),
            ("app", None),
            ("gone", None),
        ]),
        annotations: edits(&[("old", Some("x"))]),
        ..DecoratorAnswer::default()
    };
    let plan = decorate_with(&ctl, &pod, &[vec![]], answer);
    assert_eq!(kinds(&plan.ops), ["PatchObject"]);
    let Op::PatchObject { patch, changed } = &plan.ops[0] else {
        unreachable!()
    };
    // Only what changes is named; the annotation already held its value.
    assert_eq!(
        changed,
        &[
            "metadata.labels.app",
            "metadata.labels.example.com/role",
            "metadata.labels.tier"
        ]
    );
    // Key by key, so labels others set meanwhile stay; `/` escaped.
    assert_eq!(
        patch,
        &vec![
            json!({"op": "test", "path": "/metadata/uid", "value": "pod1"}),
            json!({"op": "remove", "path": "/metadata/labels/app"}),
            json!({"op": "add", "path": "/metadata/labels/example.com~1role", "value": "db"}),
            json!({"op": "add", "path": "/metadata/labels/tier", "value": "front"}),
        ]
    );
}

#[test]
fn a_map_the_object_lacks_is_added_whole_if_it_is_still_missing() {
    let ctl = decorator(false, true);
    let bare = Obj::pod().annotation("expose", "").build();
    let answer = DecoratorAnswer {
        labels: edits(&[("tier", Some("front")), ("gone", None)]),
        ..DecoratorAnswer::default()
    };
    let plan = decorate_with(&ctl, &bare, &[vec![]], answer);
    let [Op::PatchObject { patch, .. }] = &plan.ops[..] else {
        panic!("{:?}", plan.ops)
    };
    assert_eq!(
        patch[1..],
        [
            json!({"op": "test", "path": "/metadata/labels", "value": null}),
            json!({"op": "add", "path": "/metadata/labels", "value": {"tier": "front"}}),
        ]
    );
}

#[test]
fn nothing_is_written_when_the_answer_changes_nothing() {
    let ctl = decorator(false, true);
    let pod = pod().data("status", json!({"phase": "Running"})).build();
    let answer = DecoratorAnswer {
        labels: edits(&[("app", Some("web")), ("absent", None)]),
        status: None,
        ..DecoratorAnswer::default()
    };
    assert!(decorate_with(&ctl, &pod, &[vec![]], answer).ops.is_empty());
}

#[test]
fn a_status_is_replaced_as_given_through_the_subresource_or_with_the_object() {
    let pod = pod()
        .generation(3)
        .data("status", json!({"phase": "Running"}))
        .build();
    let status: serde_json::Map<String, Value> =
        serde_json::from_value(json!({"exposed": true})).unwrap();
    let answer = DecoratorAnswer {
        status: Some(status),
        ..DecoratorAnswer::default()
    };
    let with_subresource = decorate_with(&decorator(false, true), &pod, &[vec![]], answer.clone());
    // No observedGeneration: Metacontroller adds none for decorators.
    assert_eq!(
        with_subresource.ops,
        [Op::WriteStatus {
            status: json!({"exposed": true})
        }]
    );
    let without = decorate_with(&decorator(false, false), &pod, &[vec![]], answer);
    let [Op::PatchObject { patch, changed }] = &without.ops[..] else {
        panic!("{:?}", without.ops)
    };
    assert_eq!(changed, &["status"]);
    assert_eq!(
        patch.last(),
        Some(&json!({"op": "add", "path": "/status", "value": {"exposed": true}}))
    );
}

#[test]
fn an_attachment_is_applied_with_the_object_as_controller_and_the_decorator_named() {
    let ctl = decorator(false, true);
    let answer = DecoratorAnswer {
        attachments: vec![desired_service("web-0")],
        ..DecoratorAnswer::default()
    };
    let plan = decorate_with(&ctl, &pod().build(), &[vec![]], answer);
    let [
        Op::ApplyChild {
            namespace,
            name,
            body,
            ..
        },
    ] = &plan.ops[..]
    else {
        panic!("{:?}", plan.ops)
    };
    assert_eq!(
        (namespace.as_deref(), name.as_str()),
        (Some("shop"), "web-0")
    );
    assert_eq!(
        body["metadata"]["ownerReferences"],
        json!([{"apiVersion": "v1", "kind": "Pod", "name": "web-0", "uid": "pod1",
                "controller": true, "blockOwnerDeletion": true}])
    );
    assert_eq!(body["metadata"]["annotations"][DECORATOR_ANNOTATION], "svc");
    assert_eq!(body["metadata"]["namespace"], "shop");
}

#[test]
fn an_attachment_no_longer_wanted_is_deleted() {
    let ctl = decorator(false, true);
    let old = Obj::attachment("web-0")
        .annotation(DECORATOR_ANNOTATION, "svc")
        .arc();
    let plan = decorate_with(
        &ctl,
        &pod().build(),
        &[vec![old]],
        DecoratorAnswer::default(),
    );
    let [Op::DeleteChild { child, reason }] = &plan.ops[..] else {
        panic!("{:?}", plan.ops)
    };
    assert_eq!(
        (child.name.as_str(), *reason),
        ("web-0", DeleteReason::NotDesired)
    );
}

#[test]
fn an_attachment_of_a_type_not_declared_fails_before_anything_is_written() {
    let ctl = decorator(false, true);
    let answer = DecoratorAnswer {
        labels: edits(&[("tier", Some("front"))]),
        attachments: vec![
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}),
        ],
        ..DecoratorAnswer::default()
    };
    let err = decorate(&ctl, &pod().build(), &[vec![]], UNCACHED, answer, &NoMemory).unwrap_err();
    assert!(matches!(err, PlanError::UndeclaredChild { .. }), "{err}");
}

#[test]
fn the_finalizer_is_the_decorators_and_finalize_runs_on_deletion() {
    let ctl = decorator(true, true);
    let new = prelude(&ctl, &pod().build(), &[vec![]]).unwrap();
    assert_eq!(
        new.ops,
        [Op::AddFinalizer {
            before: None,
            after: vec![DECORATOR_FINALIZER.to_owned()],
        }]
    );
    let going = pod().finalizer(DECORATOR_FINALIZER).deleting().build();
    assert_eq!(
        hook_of(&prelude(&ctl, &going, &[vec![]]).unwrap()),
        HookKind::Finalize
    );
    // Out of the selector while holding the finalizer: finalized too.
    let unselected = Obj::pod().finalizer(DECORATOR_FINALIZER).build();
    assert_eq!(
        hook_of(&prelude(&ctl, &unselected, &[vec![]]).unwrap()),
        HookKind::Finalize
    );
}

#[test]
fn finalized_removes_the_finalizer_and_the_attachments_it_still_wants_are_applied() {
    let ctl = decorator(true, true);
    let going = pod().finalizer(DECORATOR_FINALIZER).deleting().build();
    let answer = DecoratorAnswer {
        attachments: vec![desired_service("web-0")],
        finalized: Some(true),
        ..DecoratorAnswer::default()
    };
    let plan = decorate_with(&ctl, &going, &[vec![]], answer.clone());
    assert_eq!(kinds(&plan.ops), ["RemoveFinalizer", "ApplyChild", "Event"]);
    assert_eq!(
        plan.ops[0],
        Op::RemoveFinalizer {
            before: Some(vec![DECORATOR_FINALIZER.to_owned()]),
            after: Vec::new(),
        }
    );
    // Going, and no finalizer of ours holds it: attachments are left to
    // the garbage collector.
    let unheld = pod().deleting().build();
    assert!(
        decorate_with(&ctl, &unheld, &[vec![]], answer)
            .ops
            .is_empty()
    );
}

#[test]
fn an_edit_the_cache_has_not_seen_yet_is_not_sent_again() {
    let ctl = decorator(false, true);
    // The cache still shows the object as the last pass read it (rv 7).
    let seen = pod().resource_version("7").build();
    let wrote = |labels: &[(&str, &str)]| WrittenMetadata {
        labels: Some(
            labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        ),
        annotations: seen.metadata.annotations.clone(),
    };
    let memory = Wrote("pod1", "7", wrote(&[("app", "web"), ("tier", "front")]));
    let answer = |tier: &str| DecoratorAnswer {
        labels: edits(&[("tier", Some(tier))]),
        ..DecoratorAnswer::default()
    };
    let plan = decorate(&ctl, &seen, &[vec![]], UNCACHED, answer("front"), &memory).unwrap();
    assert!(plan.ops.is_empty(), "{:?}", plan.ops);
    // A label only our write holds is removed: the stale cache lacks it.
    let remove = DecoratorAnswer {
        labels: edits(&[("tier", None)]),
        ..DecoratorAnswer::default()
    };
    let plan = decorate(&ctl, &seen, &[vec![]], UNCACHED, remove, &memory).unwrap();
    let [Op::PatchObject { patch, .. }] = &plan.ops[..] else {
        panic!("{:?}", plan.ops)
    };
    assert_eq!(
        patch[1],
        json!({"op": "remove", "path": "/metadata/labels/tier"})
    );
    // Once the cache shows a newer version, it is the truth again.
    let newer = pod().resource_version("8").build();
    let plan = decorate(&ctl, &newer, &[vec![]], UNCACHED, answer("front"), &memory).unwrap();
    assert_eq!(kinds(&plan.ops), ["PatchObject"]);
}

/// What the driver remembers of one metadata write: the object `uid`'s
/// labels and annotations once it was at resource version `rv`.
struct Wrote(&'static str, &'static str, WrittenMetadata);

impl AppliedMemory for Wrote {
    fn applied(&self, _: usize, _: Option<&str>, _: &str) -> Option<Applied> {
        None
    }
    fn written_metadata(&self, uid: &str, rv: &str) -> Option<WrittenMetadata> {
        (uid == self.0 && rv == self.1).then(|| self.2.clone())
    }
}
