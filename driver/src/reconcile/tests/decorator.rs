//! A DecoratorController's whole reconcile against a preloaded cache and a
//! scripted API server: the hook sees `object` and `attachments`, and its
//! answer becomes the object's patch and the attachment's apply, recorded.

use crate::controller::context::Context;
use crate::controller::triggers::parent_key;
use crate::hook::call::Endpoint;
use crate::observe::records::Outcome;
use crate::test_support::scripted_api::{answer, mock_client, no_further_request, scripted};
use crate::test_support::{Obj, context, decorator};
use kube::runtime::controller::Action;
use serde_json::{Value, json};
use std::sync::Arc;

/// Labels the Pod and wants a Service for it, if the request is a
/// decorator's (`object`, `attachments` with the Service type); anything
/// else is answered with a body no decoder takes.
fn label_and_expose(body: &[u8], _: jiff::Timestamp) -> Result<Vec<u8>, metahook_core::HookError> {
    let req: Value = serde_json::from_slice(body).unwrap_or_default();
    if req["object"]["metadata"]["name"] != "web-0"
        || req["attachments"] != json!({"Service.v1": {}})
    {
        return Ok(b"not a decorator request".to_vec());
    }
    Ok(
        br#"{"labels": {"exposed": "yes"}, "attachments": [{"apiVersion": "v1",
        "kind": "Service", "metadata": {"name": "web-0"}, "spec": {"ports": [{"port": 80}]}}]}"#
            .to_vec(),
    )
}

#[tokio::test]
async fn a_decorator_pass_patches_the_object_and_applies_its_attachment() {
    let (client, mut api) = mock_client();
    let ctl = decorator(false, true);
    let pod = Obj::pod().annotation("expose", "").build();
    let caches = context::caches(&client);
    caches.preload(&ctl.parent, vec![pod.clone()]);
    caches.preload(&ctl.children[0].resource, Vec::new());
    let ctx = Context::new(
        ctl,
        context::sync_only(Endpoint::InProcess(Arc::new(label_and_expose))),
        context::shared(client, caches),
    );
    let cached = ctx.parents.get(Some("shop"), "web-0").expect("cached");
    let (action, (patch, apply)) = scripted(super::reconcile(cached.clone(), ctx.clone()), async {
        let mut labelled = serde_json::to_value(&pod).unwrap();
        labelled["metadata"]["labels"] = json!({"exposed": "yes"});
        let patch = answer(&mut api, 200, labelled).await;
        let apply = answer(
            &mut api,
            200,
            json!({"apiVersion": "v1", "kind": "Service",
                   "metadata": {"name": "web-0", "namespace": "shop", "uid": "s1"}}),
        )
        .await;
        (patch, apply)
    })
    .await;
    no_further_request(&mut api);
    assert_eq!(action.unwrap(), Action::await_change());
    assert_eq!(
        (patch.method.as_str(), patch.path.as_str()),
        ("PATCH", "/api/v1/namespaces/shop/pods/web-0")
    );
    assert_eq!(
        patch.body[2],
        json!({"op": "add", "path": "/metadata/labels", "value": {"exposed": "yes"}})
    );
    assert!(
        apply
            .path
            .starts_with("/api/v1/namespaces/shop/services/web-0"),
        "{}",
        apply.path
    );
    assert_eq!(apply.body["metadata"]["ownerReferences"][0]["kind"], "Pod");
    let record = ctx
        .records
        .get(&parent_key(&ctx.driven, cached.as_ref()))
        .expect("a record");
    assert_eq!(record.outcome, Outcome::Succeeded);
    let ops: Vec<&str> = record.plan.iter().map(|s| s.op).collect();
    assert_eq!(ops, ["patchObject", "apply"]);
    assert_eq!(
        record.plan[0].detail.as_deref(),
        Some("metadata.labels.exposed")
    );
}
