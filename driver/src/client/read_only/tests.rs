use super::*;
use bytes::Bytes;
use http_body_util::Full;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use std::sync::{Arc, Mutex};

/// A client through the read-only layer to an API server that records
/// every request reaching it and answers each with an empty list.
fn client() -> (kube::Client, Arc<Mutex<Vec<http::Method>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    let server = tower::service_fn(move |request: http::Request<kube::client::Body>| {
        record.lock().unwrap().push(request.method().clone());
        async move {
            let body = br#"{"apiVersion":"v1","kind":"ConfigMapList","metadata":{},"items":[]}"#;
            Ok::<_, BoxError>(http::Response::new(Full::new(Bytes::from_static(body))))
        }
    });
    (
        kube::Client::new(ReadOnlyLayer.layer(server), "default"),
        seen,
    )
}

fn refused(err: kube::Error) -> RefusedWrite {
    let kube::Error::Service(source) = err else {
        panic!("not refused by the layer: {err}");
    };
    match source.downcast::<RefusedWrite>() {
        Ok(refused) => *refused,
        Err(other) => panic!("not refused by the layer: {other}"),
    }
}

#[tokio::test]
async fn lists_reach_the_server_and_no_write_leaves_the_client() {
    let (client, seen) = client();
    let api: Api<ConfigMap> = Api::namespaced(client, "shop");
    api.list(&ListParams::default().limit(10)).await.unwrap();
    assert_eq!(*seen.lock().unwrap(), [http::Method::GET]);

    let cm: ConfigMap = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web"},
    }))
    .unwrap();
    let create = refused(api.create(&PostParams::default(), &cm).await.unwrap_err());
    assert_eq!(create.method, http::Method::POST);
    assert_eq!(create.path, "/api/v1/namespaces/shop/configmaps");
    let apply = api
        .patch("web", &PatchParams::apply("plan"), &Patch::Apply(&cm))
        .await;
    assert_eq!(refused(apply.unwrap_err()).method, http::Method::PATCH);
    let replace = api.replace("web", &PostParams::default(), &cm).await;
    assert_eq!(refused(replace.unwrap_err()).method, http::Method::PUT);
    let delete = api.delete("web", &DeleteParams::default()).await;
    let delete = refused(delete.unwrap_err());
    assert_eq!(delete.method, http::Method::DELETE);
    assert_eq!(delete.path, "/api/v1/namespaces/shop/configmaps/web");
    // Only the list reached the server.
    assert_eq!(*seen.lock().unwrap(), [http::Method::GET]);
}
