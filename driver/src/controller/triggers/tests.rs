//! Which parents a parent's, a child's and a related object's change queue.

use super::*;
use crate::test_support::{Cached, Demo, FINALIZER, Obj};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, OwnerReference};
use metahook_core::protocol::RelatedResourceRule;
use std::collections::BTreeMap;

/// `demo` with a label filter on its parents: `tier = web`.
fn filtered() -> Driven {
    let mut driven = Demo::default().build();
    driven.config.parent.label_selector = Some(LabelSelector {
        match_labels: Some(BTreeMap::from([("tier".to_owned(), "web".to_owned())])),
        ..Default::default()
    });
    driven
}

fn names(keys: &[ParentKey]) -> Vec<String> {
    keys.iter()
        .map(|k| format!("{}/{}", k.namespace.as_deref().unwrap_or(""), k.name))
        .collect()
}

fn applied(obj: Obj) -> Change {
    Change::Applied(obj.cached())
}

#[test]
fn a_parent_is_queued_when_the_label_filter_or_the_finalizer_says_it_is_ours() {
    let driven = filtered();
    let web = applied(Obj::parent().label("tier", "web"));
    let other = applied(Obj::parent().label("tier", "db"));
    let finalizing = applied(Obj::parent().label("tier", "db").finalizer(FINALIZER));
    assert_eq!(
        parent_changed(&driven, &web).map(|k| k.name),
        Some("p".to_owned())
    );
    assert_eq!(parent_changed(&driven, &other), None);
    assert!(
        parent_changed(&driven, &finalizing).is_some(),
        "a parent carrying our finalizer is finalized whatever its labels"
    );
    let gone = Change::Deleted(Obj::parent().label("tier", "web").cached());
    assert!(parent_changed(&driven, &gone).is_some());
    // The key names the parent in the applier's store: same type, same name.
    let key = parent_changed(&Demo::default().build(), &web).unwrap();
    assert_eq!(key.dyntype.kind, "Thing");
    assert_eq!(key.namespace.as_deref(), Some("shop"));
}

#[test]
fn a_child_queues_its_controller_owner_when_the_uid_matches() {
    let driven = Demo::default().build();
    let parents = [
        Obj::parent().cached(),
        Obj::parent().uid("p2").namespace("other").cached(),
    ];
    let child = |uid: &str, name: &str| {
        Obj::deployment("web").controlled_by(OwnerReference {
            api_version: "example.com/v1".to_owned(),
            kind: "Thing".to_owned(),
            name: name.to_owned(),
            uid: uid.to_owned(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        })
    };
    assert_eq!(
        names(&child_changed(
            &driven,
            &applied(child("p1", "p")),
            &parents[..]
        )),
        ["shop/p"]
    );
    // Deleted children queue their owner too (it may recreate them).
    let deleted = Change::Deleted(child("p1", "p").cached());
    assert_eq!(
        names(&child_changed(&driven, &deleted, &parents[..])),
        ["shop/p"]
    );
    assert!(
        child_changed(&driven, &applied(child("old-uid", "p")), &parents[..]).is_empty(),
        "an owner of the same name with another UID is another parent"
    );
    assert!(
        child_changed(&driven, &applied(child("p1", "missing")), &parents[..]).is_empty(),
        "no such parent"
    );
    let foreign = Obj::deployment("web").controlled_by(OwnerReference {
        api_version: "apps/v1".to_owned(),
        kind: "ReplicaSet".to_owned(),
        name: "p".to_owned(),
        uid: "p1".to_owned(),
        controller: Some(true),
        block_owner_deletion: None,
    });
    assert!(
        child_changed(&driven, &applied(foreign), &parents[..]).is_empty(),
        "owned by another kind"
    );
    // A parent the label filter leaves out is not queued through its child.
    assert!(child_changed(&filtered(), &applied(child("p1", "p")), &parents[..]).is_empty());
}

#[test]
fn an_orphan_queues_the_parents_whose_selector_matches_it() {
    // generateSelector: a parent selects `controller-uid = <its UID>`.
    let driven = Demo::default().build();
    let parents = [
        Obj::parent().cached(),
        Obj::new(("example.com", "v1", "Thing"), "q")
            .uid("q1")
            .cached(),
        Obj::parent().uid("p9").namespace("elsewhere").cached(),
    ];
    let orphan = Obj::deployment("web").label("controller-uid", "q1");
    assert_eq!(
        names(&child_changed(
            &driven,
            &applied(orphan.clone()),
            &parents[..]
        )),
        ["shop/q"]
    );
    assert!(
        child_changed(
            &driven,
            &Change::Deleted(orphan.clone().cached()),
            &parents[..]
        )
        .is_empty(),
        "a deleted orphan has nobody to be adopted by"
    );
    assert!(
        child_changed(&driven, &applied(orphan.deleting()), &parents[..]).is_empty(),
        "nor has one being deleted"
    );
    let unlabelled = Obj::deployment("web");
    assert!(child_changed(&driven, &applied(unlabelled), &parents[..]).is_empty());
}

/// Rules answered by customize, per parent: the parent `Thing` of each name.
type Answers = Vec<(ParentKey, Arc<Vec<RelatedResourceRule>>)>;

fn answers(driven: &Driven, rules: Vec<(&str, Vec<RelatedResourceRule>)>) -> Answers {
    rules
        .into_iter()
        .map(|(name, rules)| {
            let parent = Obj::new(("example.com", "v1", "Thing"), name).build();
            (parent_key(driven, &parent), Arc::new(rules))
        })
        .collect()
}

/// The parents a ConfigMap's change queues.
fn queued_by_config_map(
    driven: &Driven,
    answers: &Answers,
    config_map: Obj,
    namespaces: &[Arc<CachedObject>],
) -> Vec<String> {
    let config_maps = crate::test_support::api_type("", "v1", "ConfigMap", true);
    let change = Change::Applied(config_map.cached());
    names(&related_changed(
        driven,
        HookVersion::V2,
        &config_maps,
        &change,
        answers,
        namespaces,
    ))
}

/// A rule for ConfigMaps: `names`, or a selector's fields.
fn config_map_rule(fields: serde_json::Value) -> RelatedResourceRule {
    let mut rule = serde_json::json!({"apiVersion": "v1", "resource": "configmaps"});
    if let (Some(rule), Some(fields)) = (rule.as_object_mut(), fields.as_object()) {
        rule.extend(fields.clone());
    }
    serde_json::from_value(rule).expect("a rule")
}

#[test]
fn a_related_object_queues_the_parents_whose_rules_select_it() {
    let driven = Demo::default().build();
    let named = |name: &str| config_map_rule(serde_json::json!({ "names": [name] }));
    let answers = answers(
        &driven,
        vec![
            ("a", vec![named("settings")]),
            ("b", vec![named("other")]),
            ("c", vec![named("other"), named("settings")]),
        ],
    );
    let settings = Obj::new(("", "v1", "ConfigMap"), "settings");
    assert_eq!(
        queued_by_config_map(&driven, &answers, settings, &[]),
        ["shop/a", "shop/c"]
    );
    // Another type of the same name selects nothing.
    let secrets = crate::test_support::api_type("", "v1", "Secret", true);
    let secret = Change::Applied(Obj::new(("", "v1", "Secret"), "settings").cached());
    assert!(related_changed(&driven, HookVersion::V2, &secrets, &secret, &answers, &[]).is_empty());
}

#[test]
fn related_rules_select_a_cached_object_by_its_labels_and_its_namespaces_labels() {
    let driven = Demo::default().build();
    let selecting = |fields: serde_json::Value| vec![config_map_rule(fields)];
    let answers = answers(
        &driven,
        vec![
            (
                "web",
                selecting(serde_json::json!({"labelSelector": {"matchLabels": {"app": "web"}}})),
            ),
            (
                "db",
                selecting(serde_json::json!({"labelSelector": {"matchLabels": {"app": "db"}}})),
            ),
            (
                "team",
                selecting(serde_json::json!({"namespaceSelector": {"matchLabels": {"team": "x"}}})),
            ),
        ],
    );
    let namespaces = [Obj::new(("", "v1", "Namespace"), "shop")
        .label("team", "x")
        .cached()];
    let settings = Obj::new(("", "v1", "ConfigMap"), "settings").label("app", "web");
    assert_eq!(
        queued_by_config_map(&driven, &answers, settings, &namespaces),
        ["shop/web", "shop/team"]
    );
}

#[test]
fn a_decorator_queues_what_its_annotation_selector_selects_and_adopts_no_orphan() {
    let svc = crate::test_support::decorator(true, true);
    // A selector in its spec, which a composite would claim orphans by.
    let exposed = Obj::pod().annotation("expose", "").data(
        "spec",
        serde_json::json!({"selector": {"matchLabels": {"app": "web"}}}),
    );
    assert!(parent_changed(&svc, &applied(exposed.clone())).is_some());
    // Labels do not stand in for the annotation.
    assert_eq!(
        parent_changed(&svc, &applied(Obj::pod().label("expose", ""))),
        None
    );
    let finalizing = Obj::pod().finalizer(crate::test_support::DECORATOR_FINALIZER);
    assert!(parent_changed(&svc, &applied(finalizing)).is_some());

    let pods = [exposed.cached()];
    let attachment = Obj::attachment("web-0");
    let keys = child_changed(&svc, &applied(attachment), &pods[..]);
    assert_eq!(names(&keys), ["shop/web-0"]);
    // A composite would queue the parents whose selector matches an
    // orphan; a decorator takes only what it made.
    let orphan = Obj::new(("", "v1", "Service"), "loose").label("app", "web");
    assert!(child_changed(&svc, &applied(orphan), &pods[..]).is_empty());
}
