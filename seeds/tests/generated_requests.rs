//! The generated requests the benches and `bench/load.sh` use are ones the
//! hooks accept and do real work on: if a hook's reading changes, this
//! fails rather than the benches quietly measuring an error path.

use metahook_testkit::requests;

use metahook_core::HookKind;
use serde_json::Value;

fn answer(controller: &str, hook: HookKind, request: &Value) -> Value {
    let handler = metahook_seeds::controller(controller)
        .and_then(|c| c.hook(hook))
        .unwrap_or_else(|| panic!("{controller} {hook} is in the registry"));
    let body = handler(&requests::bytes(request), metahook_testkit::now())
        .unwrap_or_else(|e| panic!("{controller} {hook}: {e}"));
    serde_json::from_slice(&body).expect("JSON")
}

#[test]
fn hello_with_many_deployments_reports_its_own() {
    let response = answer("hello", HookKind::Sync, &requests::hello(50));
    assert_eq!(response["status"]["replicas"], 2);
    assert_eq!(response["status"]["conditions"][0]["status"], "True");
    assert_eq!(response["children"].as_array().map(Vec::len), Some(1));
}

#[test]
fn hikawa_mid_song_keeps_every_zundoko_and_says_one_more() {
    for n in [10, 100] {
        let response = answer("hikawa", HookKind::Sync, &requests::hikawa(n));
        let children = response["children"].as_array().expect("children");
        assert_eq!(children.len(), n + 1, "{}", response["status"]);
        assert_eq!(response["status"]["numZundokosSaid"], n);
    }
}

#[test]
fn foo_customize_and_sync_accept_their_requests() {
    let related = answer("foo", HookKind::Customize, &requests::foo_customize());
    assert_eq!(related["relatedResources"][0]["resource"], "deployments");
    let synced = answer("foo", HookKind::Sync, &requests::foo_sync());
    assert_eq!(
        synced["children"].as_array().map(Vec::len),
        Some(1),
        "{synced}"
    );
    assert_eq!(synced["status"]["availableReplicas"], 1);
}

#[test]
fn the_thousand_zundoko_request_is_about_a_megabyte_or_more() {
    let size = requests::bytes(&requests::hikawa(1000)).len();
    assert!((900_000..2_000_000).contains(&size), "{size} bytes");
}
