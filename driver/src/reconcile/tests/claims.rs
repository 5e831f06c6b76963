//! What a whole reconcile claims through the child cache's index of
//! controllers: the hook sees the parent's own children and none another
//! controller holds, and a desired name another controller holds is left
//! alone (no write), as Metacontroller's create meets `AlreadyExists`.

use super::{reconcile_cached, runtime_with_children, settled_parent};
use crate::hook::call::Endpoint;
use crate::test_support::Obj;
use crate::test_support::scripted_api::{answer, mock_client, no_further_request, scripted};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

fn controlled_by(name: &str, uid: &str) -> kube::core::DynamicObject {
    Obj::deployment(name)
        .label("controller-uid", "p1")
        .controlled_by(OwnerReference {
            api_version: "example.com/v1".to_owned(),
            kind: "Thing".to_owned(),
            name: "other".to_owned(),
            uid: uid.to_owned(),
            controller: Some(true),
            block_owner_deletion: None,
        })
        .build()
}

#[tokio::test]
async fn another_controllers_child_is_neither_seen_nor_taken_over() {
    let (client, mut api) = mock_client();
    let seen = Arc::new(Mutex::new(Value::Null));
    let heard = seen.clone();
    let ctx = runtime_with_children(
        Endpoint::InProcess(Arc::new(move |body, _| {
            let req: Value = serde_json::from_slice(body).unwrap_or_default();
            *heard.lock().unwrap_or_else(|p| p.into_inner()) =
                req["children"]["Deployment.apps/v1"].clone();
            // Wants `web`: the name of another parent's Deployment.
            Ok(
                br#"{"status": {"ok": true}, "children": [{"apiVersion": "apps/v1",
                "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"replicas": 3}}]}"#
                    .to_vec(),
            )
        })),
        client,
        settled_parent(),
        vec![controlled_by("web", "other-uid")],
    );
    let (result, status) = scripted(
        reconcile_cached(&ctx),
        answer(
            &mut api,
            200,
            serde_json::to_value(settled_parent()).unwrap(),
        ),
    )
    .await;
    no_further_request(&mut api);
    result.unwrap();
    assert_eq!(
        (status.method.as_str(), status.path.as_str()),
        (
            "PATCH",
            "/apis/example.com/v1/namespaces/shop/things/p/status"
        ),
        "the status, and no write to `web`"
    );
    assert_eq!(*seen.lock().unwrap(), json!({}), "the hook saw no child");
}
