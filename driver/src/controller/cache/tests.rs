use super::*;
use crate::hook::wire;
use crate::test_support::scripted_api::{answer, bounded, mock_client};
use serde_json::json;

#[tokio::test]
async fn listed_objects_carry_apiversion_and_kind_like_watched_ones() {
    let (client, mut api) = mock_client();
    let stop = CancellationToken::new();
    let caches = Caches::new(client, stop.clone(), Arc::new(DriverMetrics::default()));
    let cache = caches.get_or_start(&ApiType::new(
        "apps",
        "v1",
        "Deployment",
        "deployments",
        true,
    ));
    // As kube-apiserver lists Deployments: no apiVersion or kind on
    // the items, only on the list.
    let list = bounded(answer(
        &mut api,
        200,
        json!({
            "apiVersion": "apps/v1", "kind": "DeploymentList",
            "metadata": {"resourceVersion": "7"},
            "items": [{
                "metadata": {"name": "web", "namespace": "shop", "uid": "d1",
                             "resourceVersion": "6", "generation": 1,
                             "managedFields": [{"manager": "metahook", "operation": "Apply"}]},
                "spec": {"replicas": 1},
                "status": {"replicas": 1, "readyReplicas": 1}
            }]
        }),
    ))
    .await;
    assert_eq!(list.method, "GET");
    assert_eq!(list.path, "/apis/apps/v1/deployments");
    assert!(!list.query.contains("watch=true"), "{}", list.query);
    bounded(cache.wait_synced()).await;
    let web = cache.get(Some("shop"), "web").expect("cached");
    // What a hook is sent for it.
    let sent = wire::object_json(&web);
    assert_eq!(sent["apiVersion"], "apps/v1");
    assert_eq!(sent["kind"], "Deployment");
    assert_eq!(sent["status"]["readyReplicas"], 1);
    assert!(sent["metadata"].get("managedFields").is_none(), "{sent}");
    stop.cancel();
}

fn named(name: &str) -> DynamicObject {
    serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "shop"}}))
    .unwrap()
}

#[tokio::test]
async fn a_completed_listing_reports_what_it_found_and_what_went_away() {
    let (client, _api) = crate::test_support::scripted_api::mock_client();
    let caches = Caches::new(
        client,
        CancellationToken::new(),
        Arc::new(DriverMetrics::default()),
    );
    let configmaps = ApiType::new("", "v1", "ConfigMap", "configmaps", true);
    let cache = caches.preload(&configmaps, vec![named("kept"), named("gone")]);
    let heard = Arc::new(Mutex::new(Vec::new()));
    let recorder = heard.clone();
    cache.subscribe(Arc::new(move |change| {
        let (what, obj) = match change {
            Change::Applied(o) => ("applied", o),
            Change::Deleted(o) => ("deleted", o),
        };
        recorder
            .lock()
            .unwrap()
            .push(format!("{what} {}", obj.metadata.name.clone().unwrap()));
    }));
    // A relist after the watch broke: "gone" was deleted meanwhile,
    // "new" created.
    let listing = Listing {
        before: cache.store.state(),
        listed: vec![Arc::new(named("kept")), Arc::new(named("new"))],
    };
    listing.announce(&cache);
    let mut heard = heard.lock().unwrap().clone();
    heard.sort();
    assert_eq!(heard, ["applied kept", "applied new", "deleted gone"]);
}

#[test]
fn listed_objects_get_their_type_back_and_lose_managed_fields() {
    let deployments = ApiType::new("apps", "v1", "Deployment", "deployments", true);
    // As a list item comes from the API server: no apiVersion, no kind.
    let mut listed: DynamicObject = serde_json::from_value(json!({
        "metadata": {"name": "web", "namespace": "shop",
                     "managedFields": [{"manager": "kubectl", "operation": "Update"}]},
        "spec": {"replicas": 1}
    }))
    .unwrap();
    normalize(&mut listed, &deployments);
    let json = serde_json::to_value(&listed).unwrap();
    assert_eq!(json["apiVersion"], "apps/v1");
    assert_eq!(json["kind"], "Deployment");
    assert!(json["metadata"].get("managedFields").is_none());
    assert_eq!(json["spec"]["replicas"], 1, "the rest is kept");

    // A watch event's object keeps what it says.
    let mut watched: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "apps/v1beta9", "kind": "Deployment", "metadata": {"name": "web"}
    }))
    .unwrap();
    normalize(&mut watched, &deployments);
    assert_eq!(watched.types.unwrap().api_version, "apps/v1beta9");
}
