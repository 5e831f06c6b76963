//! A controller declared and called as the service and the driver call it:
//! bytes in, bytes out.

use super::*;
use crate::conditions::condition_true;
use crate::test_types::{Note, NoteStatus, request};
use crate::{Answer, HookError, HookKind, Request, Timestamp};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use serde_json::{Value, json};

fn now() -> Timestamp {
    "2026-11-22T03:00:00Z".parse().unwrap()
}

fn call(controller: &Controller, kind: HookKind, body: &[u8]) -> Result<Value, HookError> {
    let handler = controller.hook(kind).expect("the hook");
    handler(body, now()).map(|bytes| serde_json::from_slice(&bytes).unwrap())
}

fn config_map(name: &str, namespace: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": namespace}, "data": {"text": name}})
}

/// One ConfigMap per Note; a status counting the observed ones.
fn copies(req: &Request<Note, ConfigMap>) -> Answer<NoteStatus> {
    let ready = condition_true("Ready", "Copied").message("copied");
    let status = NoteStatus {
        last_seen: None,
        copies: req.children.of::<ConfigMap>().len(),
        conditions: req.conditions([ready]),
    };
    let name = req.parent.metadata.name.clone();
    Answer::new(status).child(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name}, "data": {"text": "t"},
    }))
}

#[test]
fn a_sync_hook_reads_its_types_and_answers_the_protocols_keys() {
    let notes = Controller::composite::<Note>("note").sync(copies).build();
    assert!(notes.check().is_ok());
    let body = request(
        "n",
        json!({"text": "hi"}),
        json!({
            "ConfigMap.v1": {"ns/b": config_map("b", "ns"), "ns/a": config_map("a", "ns")},
            // A group no type of the hook reads: skipped.
            "Secret.v1": {"ns/s": {"kind": "Secret", "metadata": {"name": "s"}}},
        }),
    );
    let answer = call(&notes, HookKind::Sync, &body).unwrap();
    assert_eq!(answer["status"]["copies"], 2);
    assert_eq!(answer["status"]["conditions"][0]["observedGeneration"], 3);
    assert_eq!(
        answer["status"]["conditions"][0]["lastTransitionTime"],
        "2026-11-22T03:00:00Z"
    );
    assert_eq!(answer["children"][0]["metadata"]["name"], "n");
    let keys: Vec<&String> = answer.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["children", "status"], "no resync, no finalized");
}

#[test]
fn objects_of_a_type_are_sorted_by_namespace_and_name() {
    let body = request(
        "n",
        json!({"text": "hi"}),
        json!({"ConfigMap.v1": {
            "z/a": config_map("a", "z"), "a/c": config_map("c", "a"), "a/b": config_map("b", "a")
        }}),
    );
    let req = Request::<Note, ConfigMap>::from_json(&body, now()).unwrap();
    let names: Vec<(&str, &str)> = req
        .children
        .of::<ConfigMap>()
        .iter()
        .map(|c| {
            (
                c.metadata.namespace.as_deref().unwrap(),
                c.metadata.name.as_deref().unwrap(),
            )
        })
        .collect();
    assert_eq!(names, [("a", "b"), ("a", "c"), ("z", "a")]);
    let config_maps = req.children.of::<ConfigMap>();
    assert!(config_maps.get_in("a", "c").is_some());
    assert!(config_maps.get_in("z", "c").is_none());
    assert_eq!(
        config_maps.get("a").unwrap().metadata.namespace.as_deref(),
        Some("z")
    );
}

#[test]
fn several_types_go_each_to_its_own() {
    let body = request(
        "n",
        json!({"text": "hi"}),
        json!({
            "ConfigMap.v1": {"ns/a": config_map("a", "ns")},
            "Secret.v1": {"ns/s": {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}},
        }),
    );
    let req = Request::<Note, (ConfigMap, Secret, Deployment)>::from_json(&body, now()).unwrap();
    assert_eq!(req.children.of::<ConfigMap>().len(), 1);
    assert_eq!(
        req.children
            .of::<Secret>()
            .get("s")
            .map(|s| s.metadata.name.as_deref()),
        Some(Some("s"))
    );
    // A type of the set the request had none of.
    assert!(req.children.of::<Deployment>().is_empty());
    // A type outside the set does not compile (ObjectsBy's compile_fail example).
}

#[test]
fn a_set_of_one_type_reads_as_its_objects() {
    let body = request(
        "n",
        json!({"text": "hi"}),
        json!({"ConfigMap.v1": {"ns/a": config_map("a", "ns")}}),
    );
    let req = Request::<Note, ConfigMap>::from_json(&body, now()).unwrap();
    assert!(req.children.get("a").is_some());
    assert_eq!(req.children.len(), 1);
    let mut built: Request<Note, ConfigMap> = Request::new(req.parent.clone(), now());
    assert!(built.children.is_empty());
    built.children.insert([ConfigMap::default()]);
    assert_eq!(built.children.len(), 1);
}

#[test]
fn an_unreadable_spec_is_the_hooks_to_report_not_a_refused_request() {
    let body = request("n", json!({"text": 7}), json!({}));
    let req = Request::<Note, ConfigMap>::from_json(&body, now()).unwrap();
    let err = req.parent.spec.unwrap_err();
    assert_eq!(err.path, "spec.text");
}

#[test]
fn a_request_of_the_wrong_shape_names_the_field() {
    let notes = Controller::composite::<Note>("note").sync(copies).build();
    let err = call(
        &notes,
        HookKind::Sync,
        br#"{"parent": {"metadata": {"name": 5}}, "children": {}}"#,
    )
    .unwrap_err();
    let HookError::Decode(crate::DecodeError::Shape { path, .. }) = err else {
        panic!("{err}")
    };
    assert_eq!(path, "parent.metadata.name");
}

#[test]
fn a_hook_that_fails_says_why() {
    let notes = Controller::composite::<Note>("note")
        .sync(|_: &Request<Note>| -> Result<Answer<NoteStatus>, String> {
            Err("no ink".to_owned())
        })
        .build();
    let err = call(
        &notes,
        HookKind::Sync,
        &request("n", json!({"text": ""}), json!({})),
    )
    .unwrap_err();
    assert!(
        matches!(err, HookError::Failed { ref message } if message == "no ink"),
        "{err}"
    );
}

#[test]
fn finalize_and_resync_are_written_only_when_said() {
    let notes = Controller::composite::<Note>("note")
        .sync(|_: &Request<Note>| {
            Answer::new(NoteStatus::default()).resync_after(std::time::Duration::from_millis(1500))
        })
        .finalize(|req: &Request<Note>| {
            Answer::new(NoteStatus::default()).finalized(req.finalizing)
        })
        .build();
    let body = request("n", json!({"text": ""}), json!({}));
    let synced = call(&notes, HookKind::Sync, &body).unwrap();
    assert_eq!(synced["resyncAfterSeconds"], 1.5);
    assert!(synced.get("finalized").is_none());
    let mut finalizing: Value = serde_json::from_slice(&body).unwrap();
    finalizing["finalizing"] = json!(true);
    let finalized = call(
        &notes,
        HookKind::Finalize,
        &serde_json::to_vec(&finalizing).unwrap(),
    )
    .unwrap();
    assert_eq!(finalized["finalized"], true);
}

#[test]
fn mistakes_in_a_declaration_are_named() {
    let no_sync = Controller::composite::<Note>("note").build();
    assert!(no_sync.check().unwrap_err().problems[0].contains("no sync hook"));
    let bad_name = Controller::composite::<Note>("Notes!")
        .sync(|_: &Request<Note>| Answer::new(NoteStatus::default()))
        .build();
    assert!(bad_name.check().unwrap_err().problems[0].contains("DNS label"));
    // A strategy for Secrets, which no hook reads.
    let unread = Controller::composite::<Note>("note")
        .update::<Secret>(UpdateStrategy::Recreate)
        .sync(|_: &Request<Note, ConfigMap>| Answer::new(NoteStatus::default()))
        .build();
    let problems = unread.check().unwrap_err().problems;
    assert!(problems[0].contains("Secret.v1"), "{problems:?}");
    let twice = Controller::composite::<Note>("note")
        .sync(|_: &Request<Note>| Answer::new(NoteStatus::default()))
        .sync(|_: &Request<Note>| Answer::new(NoteStatus::default()))
        .build();
    assert!(twice.check().unwrap_err().problems[0].contains("twice"));
    // 44 characters: its finalizer's name would be 64 after the slash.
    let long = "n".repeat(44);
    let sync = |_: &Request<Note>| Answer::new(NoteStatus::default());
    let finalize = |_: &Request<Note>| Answer::new(NoteStatus::default()).finalized(true);
    let with_finalizer = Controller::composite::<Note>(&long)
        .sync(sync)
        .finalize(finalize)
        .build();
    let problems = with_finalizer.check().unwrap_err().problems;
    assert!(problems[0].contains("at most 43"), "{problems:?}");
    let without = Controller::composite::<Note>(&long).sync(sync).build();
    assert!(without.check().is_ok());
    let at_the_limit = Controller::composite::<Note>(&long[1..])
        .sync(sync)
        .finalize(finalize)
        .build();
    assert!(at_the_limit.check().is_ok());
}

/// [`copies`], reading Deployments too.
fn copies_beside(req: &Request<Note, (ConfigMap, Deployment)>) -> Answer<NoteStatus> {
    let status = NoteStatus {
        copies: req.children.of::<ConfigMap>().len(),
        ..NoteStatus::default()
    };
    Answer::new(status)
}

#[test]
fn the_child_types_are_the_hooks_whatever_the_order_of_the_calls() {
    let webhooks = Webhooks::default();
    let before = Controller::composite::<Note>("note")
        .update::<Deployment>(UpdateStrategy::RollingRecreate)
        .sync(copies)
        .finalize(copies_beside)
        .build();
    let after = Controller::composite::<Note>("note")
        .finalize(copies_beside)
        .sync(copies)
        .update::<Deployment>(UpdateStrategy::RollingRecreate)
        .build();
    assert!(before.check().is_ok() && after.check().is_ok());
    let children = |c: &Controller| c.manifest(&webhooks)["spec"]["childResources"].clone();
    // The types in the order first read (the sync hook's, then finalize's).
    assert_eq!(children(&before), children(&after));
    assert_eq!(children(&before)[0]["resource"], "configmaps");
    assert_eq!(
        children(&before)[1]["updateStrategy"]["method"],
        "RollingRecreate"
    );
    // The parent's CRD comes with the parent type, once however often named.
    let crds = after.crds();
    assert_eq!(crds.len(), 1);
    assert_eq!(crds[0].metadata.name.as_deref(), Some("notes.example.com"));
}

#[test]
fn the_manifest_is_what_metacontroller_reads() {
    let notes = Controller::composite::<Note>("note")
        .update::<Deployment>(UpdateStrategy::RollingRecreate)
        .resync_period(std::time::Duration::from_secs(30))
        .sync(copies_beside)
        .finalize(copies)
        .build();
    let manifest = notes.manifest(&Webhooks {
        service: "notes".to_owned(),
        namespace: "ops".to_owned(),
        port: 8080,
    });
    assert_eq!(
        manifest,
        json!({
            "apiVersion": "metacontroller.k8s.io/v1alpha1",
            "kind": "CompositeController",
            "metadata": {"name": "note"},
            "spec": {
                "parentResource": {"apiVersion": "example.com/v1", "resource": "notes"},
                "childResources": [
                    {"apiVersion": "v1", "resource": "configmaps", "updateStrategy": {"method": "InPlace"}},
                    {"apiVersion": "apps/v1", "resource": "deployments", "updateStrategy": {"method": "RollingRecreate"}},
                ],
                "generateSelector": true,
                "resyncPeriodSeconds": 30,
                "hooks": {
                    "sync": {"version": "v2", "webhook": {
                        "service": {"name": "notes", "namespace": "ops", "port": 8080},
                        "path": "/note/sync", "timeout": "10s"}},
                    "finalize": {"version": "v2", "webhook": {
                        "service": {"name": "notes", "namespace": "ops", "port": 8080},
                        "path": "/note/finalize", "timeout": "10s"}},
                },
            },
        })
    );
}

#[test]
fn the_parents_crd_has_the_status_fields_the_engine_writes() {
    // NoteStatus declares no observedGeneration; the driver writes it.
    let notes = Controller::composite::<Note>("note").sync(copies).build();
    let crd = serde_json::to_value(&notes.crds()[0]).unwrap();
    let status = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"];
    assert_eq!(
        status["properties"]["observedGeneration"]["type"],
        "integer"
    );
    // The status type's own fields are still there.
    assert_eq!(status["properties"]["copies"]["type"], "integer");
}

#[test]
fn a_revision_is_the_declared_one_and_no_part_of_the_manifest() {
    let plain = Controller::composite::<Note>("note").sync(copies).build();
    assert_eq!(plain.revision(), None);
    let revised = Controller::composite::<Note>("note")
        .revision("0.2.0")
        .sync(copies)
        .build();
    assert_eq!(revised.revision(), Some("0.2.0"));
    // Metacontroller is told nothing of it: the same CompositeController.
    let webhooks = Webhooks::default();
    assert_eq!(revised.manifest(&webhooks), plain.manifest(&webhooks));
}
