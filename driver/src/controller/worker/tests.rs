use super::*;
use crate::test_support::scripted_api::mock_client;
use crate::test_support::{Demo, Obj, context};
use kube::api::DynamicObject;
use serde_json::json;
use std::task::{Context as TaskContext, Poll, Waker};

/// A `demo` parent at `generation` whose status has seen `observed`.
fn thing(name: &str, generation: i64, observed: Option<i64>) -> DynamicObject {
    let status = observed.map_or(json!({}), |g| json!({"observedGeneration": g}));
    Obj::new(("example.com", "v1", "Thing"), name)
        .generation(generation)
        .data("spec", json!({}))
        .data("status", status)
        .build()
}

/// The parents the queue hands the applier, in order.
fn handed(ctx: &Context) -> Vec<String> {
    let mut cx = TaskContext::from_waker(Waker::noop());
    let mut out = Vec::new();
    while let Poll::Ready(key) = ctx.queue.poll_next(&mut cx, usize::MAX) {
        out.push(key.name);
    }
    out
}

#[tokio::test]
async fn after_a_start_the_parents_behind_their_status_go_before_the_settled_ones() {
    let (client, _api) = mock_client();
    let ctl = Demo::default().build();
    let caches = context::caches(&client);
    let mut parents = vec![thing("settled-a", 2, Some(2))];
    // Scaled while no driver ran; created while none ran; being deleted.
    parents.push(thing("scaled", 3, Some(2)));
    parents.push(thing("settled-b", 1, Some(1)));
    parents.push(thing("new", 1, None));
    parents.push(Obj(thing("going", 4, Some(4))).deleting().build());
    parents.push(thing("settled-c", 5, Some(5)));
    caches.preload(&ctl.parent, parents);
    let shared = context::shared(client, caches);
    let sync = crate::hook::call::Endpoint::InProcess(Arc::new(|_, _| Ok(b"{}".to_vec())));
    let ctx = Context::new(ctl, context::sync_only(sync), shared);
    enqueue_all(&ctx);
    let order = handed(&ctx);
    assert_eq!(order.len(), 6, "every parent is queued: {order:?}");
    let (first, rest) = order.split_at(3);
    let mut first = first.to_vec();
    first.sort();
    assert_eq!(first, ["going", "new", "scaled"], "{order:?}");
    assert!(
        rest.iter().all(|name| name.starts_with("settled-")),
        "{order:?}"
    );
}

#[tokio::test]
async fn a_first_listing_queues_each_parent_as_its_own_fields_say_and_a_watched_change_before_all()
{
    let (client, _api) = mock_client();
    let ctl = Demo::default().build();
    let caches = context::caches(&client);
    let parents = vec![
        thing("settled-a", 2, Some(2)),
        thing("scaled", 3, Some(2)),
        thing("settled-b", 1, Some(1)),
        thing("new", 1, None),
        thing("settled-c", 5, Some(5)),
    ];
    caches.preload(&ctl.parent, parents);
    let shared = context::shared(client, caches);
    let sync = crate::hook::call::Endpoint::InProcess(Arc::new(|_, _| Ok(b"{}".to_vec())));
    let ctx = Context::new(ctl, context::sync_only(sync), shared);
    subscribe(&ctx);
    // What the caches tell at the end of their first listing: every parent
    // found (before this, every one was a change, and went first).
    for parent in ctx.parents.list(None) {
        ctx.parents.notify(&Change::Listed(parent));
    }
    // Then a watch sees one of the settled ones change.
    let settled_c = ctx
        .parents
        .list(None)
        .into_iter()
        .find(|p| p.metadata.name.as_deref() == Some("settled-c"));
    ctx.parents.notify(&Change::Applied(settled_c.unwrap()));
    enqueue_all(&ctx);
    let order = handed(&ctx);
    assert_eq!(order.len(), 5, "every parent is queued once: {order:?}");
    assert_eq!(order[0], "settled-c", "{order:?}");
    let mut behind = order[1..3].to_vec();
    behind.sort();
    assert_eq!(behind, ["new", "scaled"], "{order:?}");
    let mut rest = order[3..].to_vec();
    rest.sort();
    assert_eq!(rest, ["settled-a", "settled-b"], "{order:?}");
}
