//! The convergence check on controllers made to misbehave: each must fail
//! it, naming the object and the field that kept changing.

use k8s_openapi::api::core::v1::ConfigMap;
use metahook_core::test_types::{Note, NoteStatus};
use metahook_core::{Answer, Controller, Request};
use metahook_testing::{Converge, ConvergeError};
use serde_json::json;

fn note() -> serde_json::Value {
    json!({"apiVersion": "example.com/v1", "kind": "Note",
           "metadata": {"name": "n", "namespace": "ns"}, "spec": {"text": "1024Mi"}})
}

fn config_map(req: &Request<Note, ConfigMap>) -> serde_json::Value {
    let size = req
        .parent
        .spec
        .as_ref()
        .map(|s| s.text.clone())
        .unwrap_or_default();
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": req.parent.metadata.name}, "data": {"size": size}})
}

/// Writes the time of every call into its status.
fn stamping(req: &Request<Note, ConfigMap>) -> Answer<NoteStatus> {
    Answer::new(NoteStatus {
        last_seen: Some(req.now.to_string()),
        copies: req.children.of::<ConfigMap>().len(),
        conditions: Default::default(),
    })
    .child(config_map(req))
}

/// A well-behaved one.
fn steady(req: &Request<Note, ConfigMap>) -> Answer<NoteStatus> {
    Answer::new(NoteStatus {
        last_seen: None,
        copies: req.children.of::<ConfigMap>().len(),
        conditions: Default::default(),
    })
    .child(config_map(req))
}

fn notes(sync: fn(&Request<Note, ConfigMap>) -> Answer<NoteStatus>) -> Controller {
    Controller::composite::<Note>("note").sync(sync).build()
}

#[test]
fn a_well_behaved_controller_settles_and_says_in_how_many_passes() {
    let settled = Converge::new(notes(steady))
        .unwrap()
        .parent(note())
        .run()
        .unwrap();
    // Creates the ConfigMap (status 0), then counts it (status 1), then
    // writes nothing.
    assert_eq!(settled.passes(), 3, "{:?}", settled.history());
    assert_eq!(settled.parent().unwrap()["status"]["copies"], 1);
    let gone = settled.delete().unwrap();
    assert!(gone.parent().is_none());
    assert!(
        gone.objects::<ConfigMap>().is_empty(),
        "collected with its parent"
    );
}

#[test]
fn a_timestamp_in_the_status_never_settles_and_is_named() {
    let err = Converge::new(notes(stamping))
        .unwrap()
        .parent(note())
        .max_passes(6)
        .run()
        .err()
        .expect("it never settles");
    let ConvergeError::NotSettled(not) = &err else {
        panic!("{err}")
    };
    assert_eq!(not.passes, 6);
    let message = err.to_string();
    assert!(message.contains("status of Note ns/n"), "{message}");
    assert!(message.contains("status.lastSeen"), "{message}");
}

#[test]
fn a_field_the_server_normalizes_otherwise_never_settles_and_is_named() {
    let err = Converge::new(notes(steady))
        .unwrap()
        .parent(note())
        // The API server keeps quantities in their canonical form.
        .defaults::<ConfigMap>(|c| {
            if c["data"]["size"] == "1024Mi" {
                c["data"]["size"] = json!("1Gi");
            }
        })
        .max_passes(5)
        .run()
        .err()
        .expect("it never settles");
    let message = err.to_string();
    assert!(message.contains("apply ConfigMap ns/n"), "{message}");
    assert!(
        message.contains(r#"data.size: sent "1024Mi", the server keeps "1Gi""#),
        "{message}"
    );
}

#[test]
fn a_controller_that_settles_too_slowly_fails_within_the_passes_allowed() {
    let err = Converge::new(notes(steady))
        .unwrap()
        .parent(note())
        .max_passes(2)
        .run()
        .err()
        .expect("three passes needed, two allowed");
    assert!(
        matches!(err, ConvergeError::NotSettled(ref n) if n.passes == 2),
        "{err}"
    );
}

/// Answers a Secret, a type its request does not name.
fn stray(req: &Request<Note, ConfigMap>) -> Answer<NoteStatus> {
    Answer::new(NoteStatus::default()).child(json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": req.parent.metadata.name}}))
}

#[test]
fn a_mistake_is_named_in_the_message_itself() {
    // The declaration is checked before anything runs.
    let named = Controller::composite::<Note>("Notes!").sync(steady).build();
    let err = Converge::new(named).err().expect("a bad name");
    assert!(matches!(err, ConvergeError::Declaration(_)), "{err:?}");
    assert!(err.to_string().contains("DNS label"), "{err}");
    // A desired child of a type the controller does not own: the cause is
    // in `{err}`, not only in `{err:?}`.
    let err = Converge::new(notes(stray))
        .unwrap()
        .parent(note())
        .run()
        .err()
        .expect("the driver refuses the answer");
    let message = err.to_string();
    assert!(message.starts_with("pass 1: "), "{message}");
    assert!(message.contains("Secret"), "{message}");
}
