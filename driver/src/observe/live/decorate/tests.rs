//! A decorator's parent planned against a scripted API server: the
//! attachments listed once, the hook called in the process with the
//! request the driver builds, and its answer planned with nothing written
//! (the script takes the list and nothing else).

use super::super::context::{Reader, Resolved};
use super::super::pass;
use super::super::window::Window;
use crate::controller::cache::CachedObject;
use crate::controller::context::HookTargets;
use crate::decide::plan::{self, NoMemory, Op};
use crate::hook::call::{Endpoint, HookCaller};
use crate::hook::wire::decorator;
use crate::observe::live::ParentPlan;
use crate::observe::metrics::DriverMetrics;
use crate::observe::records::FieldChange;
use crate::test_support::context::hook;
use crate::test_support::scripted_api::{answer, mock_client, no_further_request, scripted};
use crate::test_support::{Obj, decorator as svc};
use kube::api::DynamicObject;
use metahook_core::{HookError, HookKind};
use serde_json::{Value, json};
use std::sync::Arc;

const FINALIZER: &str = "metacontroller.io/decoratorcontroller-svc";

/// Labels the Pod, says how many attachments it saw in its status, and
/// wants a Service for it unless the Pod is annotated `want: no`. A
/// request that is not a decorator's as the driver builds it (`object`
/// with the finalizer the prelude adds, `attachments` keyed by type) is
/// answered with a body no decoder takes.
fn expose(body: &[u8], _: jiff::Timestamp) -> Result<Vec<u8>, HookError> {
    let req: Value = serde_json::from_slice(body).unwrap_or_default();
    let object = &req["object"];
    let Some(seen) = req["attachments"]["Service.v1"].as_object() else {
        return Ok(b"not a decorator request".to_vec());
    };
    if object["metadata"]["finalizers"] != json!([FINALIZER]) || req.get("parent").is_some() {
        return Ok(b"not the object the driver would send".to_vec());
    }
    let wanted = object["metadata"]["annotations"]["want"] != "no";
    let service = json!({"apiVersion": "v1", "kind": "Service",
                         "metadata": {"name": "web-0"}, "spec": {"ports": [{"port": 80}]}});
    let answer = json!({
        "labels": {"exposed": "yes", "remove-me": null},
        "status": {"attachments": seen.len()},
        "attachments": if wanted { vec![service] } else { Vec::new() },
    });
    Ok(serde_json::to_vec(&answer).unwrap_or_default())
}

fn resolved() -> Resolved {
    let endpoint = || Endpoint::InProcess(Arc::new(expose));
    Resolved {
        driven: svc(true, true),
        hooks: HookTargets {
            sync: hook(HookKind::Sync, endpoint()),
            finalize: Some(hook(HookKind::Finalize, endpoint())),
            customize: None,
        },
    }
}

/// `pod` planned with `services` in its namespace.
async fn plan_of(pod: &DynamicObject, services: Vec<DynamicObject>) -> ParentPlan {
    let (client, mut api) = mock_client();
    let resolved = resolved();
    let reader = Reader {
        client: client.clone(),
        caller: HookCaller::in_process(jiff::Timestamp::now, Arc::new(DriverMetrics::default())),
        related: Default::default(),
    };
    let cached = CachedObject::of(pod).unwrap();
    let (planned, listed) = scripted(
        async {
            let mut window = Window::empty();
            window
                .hold(&client, &resolved.driven, Some("shop"))
                .await
                .unwrap();
            pass::plan(&reader, &resolved, &window, &cached).await
        },
        answer(
            &mut api,
            200,
            json!({"apiVersion": "v1", "kind": "ServiceList", "metadata": {}, "items": services}),
        ),
    )
    .await;
    no_further_request(&mut api);
    assert_eq!(
        (listed.method.as_str(), listed.path.as_str()),
        ("GET", "/api/v1/namespaces/shop/services"),
        "the attachments listed, and nothing else sent"
    );
    planned
}

fn ops(plan: &ParentPlan) -> Vec<&str> {
    plan.steps.iter().map(|s| s.op).collect()
}

fn change(path: &str, from: Value, to: Value) -> FieldChange {
    FieldChange {
        path: path.to_owned(),
        from,
        to,
    }
}

#[tokio::test]
async fn a_new_object_gets_the_finalizer_its_labels_status_and_attachment() {
    let pod = Obj::pod()
        .annotation("expose", "")
        .label("remove-me", "x")
        .build();
    let plan = plan_of(&pod, Vec::new()).await;
    assert_eq!(plan.failure, None);
    assert_eq!(plan.hook, Some("sync"));
    assert_eq!((plan.kind.as_str(), plan.name.as_str()), ("Pod", "web-0"));
    assert_eq!(
        ops(&plan),
        ["addFinalizer", "writeStatus", "patchObject", "apply"]
    );
    assert_eq!(
        plan.steps[1].changed,
        [change("status.attachments", Value::Null, json!(0))]
    );
    let patch = &plan.steps[2];
    assert_eq!(
        patch.changed,
        [
            change("metadata.labels.exposed", Value::Null, json!("yes")),
            change("metadata.labels.remove-me", json!("x"), Value::Null),
        ],
        "each label the hook sets or removes, with both values"
    );
    assert_eq!(patch.detail, None, "the fields say what the patch does");
    let apply = &plan.steps[3];
    assert_eq!(
        (apply.kind.as_deref(), apply.name.as_deref()),
        (Some("Service"), Some("web-0"))
    );
    assert_eq!(apply.detail.as_deref(), Some("create"));
}

/// The Pod and its Service as the driver leaves them after the hook
/// answers `attachments` (the apply's body as the planner writes it:
/// controller owner, the decorator's annotation, the fingerprint).
fn converged() -> (DynamicObject, DynamicObject) {
    let pod = Obj::pod()
        .annotation("expose", "")
        .label("exposed", "yes")
        .finalizer(FINALIZER)
        .data("status", json!({"attachments": 1}))
        .build();
    let answer = expose(
        &serde_json::to_vec(&json!({
            "object": pod, "attachments": {"Service.v1": {"shop/web-0": {}}},
        }))
        .unwrap(),
        jiff::Timestamp::now(),
    )
    .unwrap();
    let answer = decorator::decode_response(&answer, true).unwrap();
    let ctl = svc(true, true);
    let none: Vec<Vec<Arc<DynamicObject>>> = vec![Vec::new()];
    let first = plan::decorate(&ctl, &pod, &none, &none[..], answer, &NoMemory).unwrap();
    let Some(Op::ApplyChild { body, .. }) = first.ops.last() else {
        panic!("an apply: {:?}", first.ops);
    };
    let mut service = body.clone();
    service["metadata"]["uid"] = json!("svc1");
    service["metadata"]["namespace"] = json!("shop");
    (pod, serde_json::from_value(service).unwrap())
}

#[tokio::test]
async fn a_converged_object_plans_nothing_and_an_unwanted_attachment_its_delete() {
    let (pod, service) = converged();
    assert_eq!(
        service.metadata.annotations.as_ref().unwrap()["metacontroller.k8s.io/decorator-controller"],
        "svc",
        "the planner marks an attachment with the decorator's name"
    );
    let plan = plan_of(&pod, vec![service.clone()]).await;
    assert_eq!(plan.failure, None);
    assert!(!plan.changes(), "nothing to do: {:?}", plan.steps);

    let mut unwanted = pod.clone();
    unwanted
        .metadata
        .annotations
        .get_or_insert_default()
        .insert("want".to_owned(), "no".to_owned());
    let plan = plan_of(&unwanted, vec![service]).await;
    assert_eq!(plan.failure, None);
    assert_eq!(ops(&plan), ["delete"], "{:?}", plan.steps);
    let delete = &plan.steps[0];
    assert_eq!(
        (
            delete.kind.as_deref(),
            delete.name.as_deref(),
            delete.detail.as_deref()
        ),
        (Some("Service"), Some("web-0"), Some("not desired"))
    );
}

#[tokio::test]
async fn a_service_it_does_not_mark_is_not_an_attachment() {
    // Controlled by the Pod, but not marked with this decorator's name:
    // not the hook's to see, and its name is taken.
    let (pod, mut service) = converged();
    service.metadata.annotations = None;
    let plan = plan_of(&pod, vec![service]).await;
    assert_eq!(plan.failure, None);
    // The hook saw no attachment (status 1 → 0) and the Service's name
    // is held: nothing applied over it.
    assert_eq!(ops(&plan), ["writeStatus"], "{:?}", plan.steps);
    assert_eq!(
        plan.steps[0].changed,
        [change("status.attachments", json!(1), json!(0))]
    );
}
