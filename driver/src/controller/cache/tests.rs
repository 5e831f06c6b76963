use super::*;
use crate::hook::wire;
use crate::test_support::scripted_api::{answer, bounded, mock_client};
use serde_json::json;

#[tokio::test]
async fn listed_objects_carry_apiversion_and_kind_like_watched_ones() {
    let (client, mut api) = mock_client();
    let stop = CancellationToken::new();
    let caches = Caches::new(client, stop.clone(), Arc::new(DriverMetrics::default()));
    let cache = caches.get_or_start(&ResolvedType::new(
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
    // Pages of LIST_PAGE_SIZE: what bounds a relist's peak.
    assert!(list.query.contains("limit=100"), "{}", list.query);
    bounded(cache.wait_synced()).await;
    let web = cache.get(Some("shop"), "web").expect("cached");
    // What a hook is sent for it.
    let sent = wire::object_json(&web.decode().unwrap());
    assert_eq!(sent["apiVersion"], "apps/v1");
    assert_eq!(sent["kind"], "Deployment");
    assert_eq!(sent["status"]["readyReplicas"], 1);
    assert!(sent["metadata"].get("managedFields").is_none(), "{sent}");
    stop.cancel();
}

fn named(name: &str) -> CachedObject {
    serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "shop"}}))
    .unwrap()
}

fn version(obj: &TypeCache, name: &str) -> Option<String> {
    let found = obj.get(Some("shop"), name)?;
    let found = found.decode().unwrap();
    Some(found.data["data"]["v"].as_str().unwrap_or("1").to_owned())
}

fn named_at(name: &str, v: &str) -> CachedObject {
    serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "shop"}, "data": {"v": v}}))
    .unwrap()
}

/// A ConfigMap cache not listed yet, and the writer of its store.
fn unlisted_configmaps() -> (reflector::store::Writer<CachedObject>, TypeCache) {
    let configmaps = ResolvedType::new("", "v1", "ConfigMap", "configmaps", true);
    let writer = reflector::store::Writer::new(SharedType::of(&configmaps.api));
    let cache = TypeCache::new(configmaps, writer.as_reader(), false);
    (writer, cache)
}

/// Subscribes to `cache`, recording what it is told in `heard`; returns
/// what was told since last asked, sorted.
fn recording(
    cache: &TypeCache,
    heard: Arc<Mutex<Vec<String>>>,
) -> impl Fn() -> Vec<String> + use<> {
    let recorder = heard.clone();
    cache.subscribe(Arc::new(move |change| {
        let what = match change {
            Change::Applied(_) => "applied",
            Change::Listed(_) => "listed",
            Change::Deleted(_) => "deleted",
        };
        let name = change.object().metadata.name.clone().unwrap();
        recorder.lock().unwrap().push(format!("{what} {name}"));
    }));
    move || {
        let mut told = std::mem::take(&mut *heard.lock().unwrap());
        told.sort();
        told
    }
}

fn at_version(name: &str, resource_version: &str) -> CachedObject {
    serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "shop", "resourceVersion": resource_version}}))
    .unwrap()
}

#[test]
fn a_relist_tells_an_object_at_the_version_held_as_listed_and_one_at_another_as_applied() {
    let (mut writer, cache) = unlisted_configmaps();
    let told = recording(&cache, Arc::new(Mutex::new(Vec::new())));
    let mut listing = Listing::default();
    listing.apply(&mut writer, &cache, watcher::Event::Init);
    for obj in [at_version("same", "5"), at_version("moved", "6")] {
        listing.apply(&mut writer, &cache, watcher::Event::InitApply(obj));
    }
    assert!(listing.apply(&mut writer, &cache, watcher::Event::InitDone));
    assert_eq!(told(), ["listed moved", "listed same"]);
    // The watch broke; meanwhile "moved" changed and "fresh" was created.
    listing.apply(&mut writer, &cache, watcher::Event::Init);
    for obj in [
        at_version("same", "5"),
        at_version("moved", "9"),
        at_version("fresh", "8"),
    ] {
        listing.apply(&mut writer, &cache, watcher::Event::InitApply(obj));
    }
    assert!(listing.apply(&mut writer, &cache, watcher::Event::InitDone));
    assert_eq!(told(), ["applied fresh", "applied moved", "listed same"]);
}

#[test]
fn a_relist_replaces_objects_in_place_and_reports_what_it_found_and_what_went_away() {
    let (mut writer, cache) = unlisted_configmaps();
    let told = recording(&cache, Arc::new(Mutex::new(Vec::new())));
    let mut listing = Listing::default();

    // The first listing reaches the store whole, at its end.
    assert!(!listing.apply(&mut writer, &cache, watcher::Event::Init));
    listing.apply(
        &mut writer,
        &cache,
        watcher::Event::InitApply(named("kept")),
    );
    listing.apply(
        &mut writer,
        &cache,
        watcher::Event::InitApply(named("gone")),
    );
    assert_eq!(version(&cache, "kept"), None, "not before its end");
    assert!(listing.apply(&mut writer, &cache, watcher::Event::InitDone));
    // Found, not changed: their parents are not put first.
    assert_eq!(told(), ["listed gone", "listed kept"]);

    // A relist after the watch broke: "kept" changed, "gone" was deleted
    // meanwhile, "new" created. Each object found replaces its copy at
    // once: the store never holds the type twice.
    assert!(!listing.apply(&mut writer, &cache, watcher::Event::Init));
    listing.apply(
        &mut writer,
        &cache,
        watcher::Event::InitApply(named_at("kept", "2")),
    );
    assert_eq!(version(&cache, "kept").as_deref(), Some("2"));
    assert_eq!(cache.store.len(), 2, "replaced, not added beside");
    listing.apply(&mut writer, &cache, watcher::Event::InitApply(named("new")));
    assert!(
        told().is_empty(),
        "subscribers hear of a listing at its end"
    );
    assert!(listing.apply(&mut writer, &cache, watcher::Event::InitDone));
    assert_eq!(told(), ["applied kept", "applied new", "deleted gone"]);
    assert_eq!(version(&cache, "gone"), None);
    assert_eq!(cache.store.len(), 2);

    // A relist cut short, then another: what the last one did not find
    // goes, whatever the first had replaced.
    listing.apply(&mut writer, &cache, watcher::Event::Init);
    listing.apply(
        &mut writer,
        &cache,
        watcher::Event::InitApply(named_at("kept", "3")),
    );
    listing.apply(&mut writer, &cache, watcher::Event::Init);
    listing.apply(&mut writer, &cache, watcher::Event::InitApply(named("new")));
    assert!(listing.apply(&mut writer, &cache, watcher::Event::InitDone));
    assert_eq!(told(), ["applied new", "deleted kept"]);

    // Watched changes go straight through, each told at once.
    listing.apply(
        &mut writer,
        &cache,
        watcher::Event::Apply(named_at("new", "4")),
    );
    assert_eq!(version(&cache, "new").as_deref(), Some("4"));
    listing.apply(&mut writer, &cache, watcher::Event::Delete(named("new")));
    assert_eq!(told(), ["applied new", "deleted new"]);
    assert_eq!(cache.store.len(), 0);
}

#[test]
fn listed_objects_get_their_type_back_and_lose_managed_fields() {
    let deployments = ResolvedType::new("apps", "v1", "Deployment", "deployments", true);
    // As a list item comes from the API server: no apiVersion, no kind.
    let mut listed: CachedObject = serde_json::from_value(json!({
        "metadata": {"name": "web", "namespace": "shop",
                     "managedFields": [{"manager": "kubectl", "operation": "Update"}]},
        "spec": {"replicas": 1}
    }))
    .unwrap();
    normalize(&mut listed, &deployments);
    let json = serde_json::to_value(listed.decode().unwrap()).unwrap();
    assert_eq!(json["apiVersion"], "apps/v1");
    assert_eq!(json["kind"], "Deployment");
    assert!(json["metadata"].get("managedFields").is_none());
    assert_eq!(json["spec"]["replicas"], 1, "the rest is kept");

    // A watch event's object keeps what it says.
    let mut watched: CachedObject = serde_json::from_value(json!({
        "apiVersion": "apps/v1beta9", "kind": "Deployment", "metadata": {"name": "web"}
    }))
    .unwrap();
    normalize(&mut watched, &deployments);
    assert_eq!(watched.types.unwrap().api_version, "apps/v1beta9");
}

fn in_ns(name: &str, namespace: &str, controller: Option<&str>) -> CachedObject {
    let mut obj = named(name);
    obj.metadata.namespace = Some(namespace.to_owned());
    if let Some(uid) = controller {
        obj.metadata.owner_references = Some(vec![
            serde_json::from_value(
                json!({"apiVersion": "v1", "kind": "Other", "name": "not-controller",
                "uid": "not-controller", "controller": false}),
            )
            .unwrap(),
            serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": "Parent",
                "name": "p", "uid": uid, "controller": true}))
            .unwrap(),
        ]);
    }
    obj
}

/// The names `uid` may claim in `namespace`, sorted.
fn claimable(cache: &TypeCache, namespace: Option<&str>, uid: &str) -> Vec<String> {
    let mut names: Vec<String> = cache
        .candidates(namespace, uid)
        .iter()
        .map(|o| {
            format!(
                "{}/{}",
                o.metadata.namespace.as_deref().unwrap_or_default(),
                o.metadata.name.as_deref().unwrap_or_default()
            )
        })
        .collect();
    names.sort();
    names
}

#[test]
fn a_parent_may_claim_only_its_own_objects_and_orphans_through_every_kind_of_change() {
    let (mut writer, cache) = unlisted_configmaps();
    let mut listing = Listing::default();
    let indexed = |cache: &TypeCache| cache.owners.read().unwrap().len();

    listing.apply(&mut writer, &cache, watcher::Event::Init);
    for obj in [
        in_ns("a-child", "shop", Some("uid-a")),
        in_ns("b-child", "shop", Some("uid-b")),
        in_ns("orphan", "shop", None),
        in_ns("far-orphan", "depot", None),
        in_ns("a-far-child", "depot", Some("uid-a")),
    ] {
        listing.apply(&mut writer, &cache, watcher::Event::InitApply(obj));
    }
    assert!(
        claimable(&cache, Some("shop"), "uid-a").is_empty(),
        "nothing before the listing ends"
    );
    listing.apply(&mut writer, &cache, watcher::Event::InitDone);
    assert_eq!(
        claimable(&cache, Some("shop"), "uid-a"),
        ["shop/a-child", "shop/orphan"]
    );
    assert_eq!(
        claimable(&cache, None, "uid-a"),
        [
            "depot/a-far-child",
            "depot/far-orphan",
            "shop/a-child",
            "shop/orphan"
        ]
    );
    assert_eq!(
        claimable(&cache, Some("shop"), "uid-b"),
        ["shop/b-child", "shop/orphan"]
    );
    assert_eq!(claimable(&cache, Some("shop"), "uid-gone"), ["shop/orphan"]);

    // b adopts the orphan; a releases its child.
    listing.apply(
        &mut writer,
        &cache,
        watcher::Event::Apply(in_ns("orphan", "shop", Some("uid-b"))),
    );
    listing.apply(
        &mut writer,
        &cache,
        watcher::Event::Apply(in_ns("a-child", "shop", None)),
    );
    assert_eq!(claimable(&cache, Some("shop"), "uid-a"), ["shop/a-child"]);
    assert_eq!(
        claimable(&cache, Some("shop"), "uid-b"),
        ["shop/a-child", "shop/b-child", "shop/orphan"]
    );
    assert_eq!(indexed(&cache), 5, "each object once");

    // A relist that no longer finds b-child, and a deletion seen by watch.
    listing.apply(&mut writer, &cache, watcher::Event::Init);
    for obj in [
        in_ns("a-child", "shop", None),
        in_ns("orphan", "shop", Some("uid-b")),
        in_ns("far-orphan", "depot", None),
        in_ns("a-far-child", "depot", Some("uid-a")),
    ] {
        listing.apply(&mut writer, &cache, watcher::Event::InitApply(obj));
    }
    listing.apply(&mut writer, &cache, watcher::Event::InitDone);
    listing.apply(
        &mut writer,
        &cache,
        watcher::Event::Delete(in_ns("a-far-child", "depot", Some("uid-a"))),
    );
    assert_eq!(
        claimable(&cache, Some("shop"), "uid-b"),
        ["shop/a-child", "shop/orphan"]
    );
    assert_eq!(
        claimable(&cache, Some("depot"), "uid-a"),
        ["depot/far-orphan"]
    );
    assert_eq!(indexed(&cache), cache.store.len(), "nothing stale");
    assert_eq!(indexed(&cache), 3);
}
