//! The pure pipeline with the real Hello hook: request built as
//! Metacontroller builds it, the registry's handler, the response decoded,
//! planned. No API server: the "cluster" is the objects fed back in.

use crate::decide::model::Driven;
use crate::decide::plan::{self, Applied, AppliedMemory, Next, Op, StatusPace};
use crate::wire::{self, TypedObjects};
use kube::core::DynamicObject;
use metahook_core::HookKind;
use serde_json::json;
use std::sync::Arc;

fn hello(replicas: i64, status: Option<serde_json::Value>) -> DynamicObject {
    let mut h = json!({
        "apiVersion": "fraim.co.jp/v1", "kind": "Hello",
        "metadata": {"name": "greeter", "namespace": "shop", "uid": "h1", "generation": 1,
                     "resourceVersion": "5",
                     "finalizers": ["metacontroller.io/compositecontroller-hello"]},
        "spec": {"replicas": replicas}
    });
    if let Some(s) = status {
        h["status"] = s;
    }
    serde_json::from_value(h).unwrap()
}

/// One pass: claimed children in, plan out.
fn pass(
    ctl: &Driven,
    parent: &DynamicObject,
    children: Vec<Arc<DynamicObject>>,
    memory: &dyn AppliedMemory,
) -> plan::Plan {
    let candidates = vec![children];
    let prelude = plan::prelude(ctl, parent, &candidates).unwrap();
    assert!(prelude.ops.is_empty(), "{:?}", prelude.ops);
    let Next::CallHook { hook, observed } = prelude.next else {
        panic!("no hook")
    };
    assert_eq!(hook, HookKind::Sync);
    let typed = [TypedObjects {
        resource: &ctl.children[0].resource,
        objects: &observed[0],
    }];
    let hook_config = &ctl.config.hooks.sync;
    let children = wire::object_map(&typed, hook_config.version, Some("shop"));
    let request = wire::sync_request(
        &ctl.config.object,
        parent,
        &children,
        &Default::default(),
        false,
    )
    .unwrap();
    let handler = metahook_seeds::controller("hello")
        .unwrap()
        .hook(HookKind::Sync)
        .unwrap();
    let now = "2026-11-22T03:00:00Z".parse().unwrap();
    let body = handler(&request, now).unwrap();
    let response = wire::decode_sync_response(&body, true).unwrap();
    plan::after_hook(
        ctl,
        parent,
        &observed,
        candidates.as_slice(),
        response,
        memory,
        StatusPace::Now,
    )
    .unwrap()
}

struct Remember(Option<Applied>);
impl AppliedMemory for Remember {
    fn applied(&self, _: usize, _: Option<&str>, _: &str) -> Option<Applied> {
        self.0.clone()
    }
}

#[test]
fn hello_converges_and_holds_its_deployment_on_an_invalid_spec() {
    let ctl = hello_controller();
    // 1. A new Hello: its Deployment is applied, the status written.
    let first = pass(&ctl, &hello(2, None), vec![], &Remember(None));
    let [
        Op::ApplyChild {
            body, fingerprint, ..
        },
        Op::WriteStatus { status },
        ..,
    ] = first.ops.as_slice()
    else {
        panic!("{:?}", first.ops)
    };
    assert_eq!(body["spec"]["replicas"], 2);
    assert_eq!(body["metadata"]["labels"]["controller-uid"], "h1");
    assert_eq!(body["metadata"]["ownerReferences"][0]["uid"], "h1");
    assert_eq!(status["observedGeneration"], 1);

    // 2. Fed back as the cluster would have it (defaults, status): nothing
    //    to apply, and the same status is not written again.
    let mut stored = body.clone();
    stored["metadata"]["uid"] = json!("d1");
    stored["metadata"]["generation"] = json!(1);
    stored["metadata"]["resourceVersion"] = json!("7");
    stored["spec"]["revisionHistoryLimit"] = json!(10);
    stored["status"] = json!({"replicas": 2, "readyReplicas": 2, "availableReplicas": 2});
    let deployment: Arc<DynamicObject> = Arc::new(serde_json::from_value(stored).unwrap());
    let memory = Remember(Some(Applied {
        fingerprint: *fingerprint,
        uid: "d1".to_owned(),
        generation: 1,
        resource_version: "7".to_owned(),
    }));
    let second = pass(
        &ctl,
        &hello(2, Some(status.clone())),
        vec![deployment.clone()],
        &memory,
    );
    let Some(Op::WriteStatus { status: ready }) = second
        .ops
        .iter()
        .find(|o| matches!(o, Op::WriteStatus { .. }))
    else {
        panic!("the observed replicas change the status: {:?}", second.ops)
    };
    assert!(
        !second
            .ops
            .iter()
            .any(|o| matches!(o, Op::ApplyChild { .. } | Op::DeleteChild { .. }))
    );
    let third = pass(
        &ctl,
        &hello(2, Some(ready.clone())),
        vec![deployment.clone()],
        &memory,
    );
    assert!(third.ops.is_empty(), "converged: {:?}", third.ops);

    // 3. replicas 21 (past the schema): the Deployment is held as it is,
    //    never deleted, and the status says why (a Warning Event).
    let invalid = pass(
        &ctl,
        &hello(21, Some(ready.clone())),
        vec![deployment],
        &memory,
    );
    assert!(
        !invalid
            .ops
            .iter()
            .any(|o| matches!(o, Op::DeleteChild { .. })),
        "{:?}",
        invalid.ops
    );
    for op in &invalid.ops {
        if let Op::ApplyChild { body, .. } = op {
            assert_eq!(body["spec"]["replicas"], 2, "held, not scaled to 21");
        }
    }
    assert!(invalid.ops.iter().any(|o| matches!(o, Op::Event { kind: plan::EventType::Warning, reason, .. } if reason == "InvalidSpec")), "{:?}", invalid.ops);
}

/// The built-in `hello` controller, with the types discovery would find.
fn hello_controller() -> Driven {
    let config = crate::config::from_controllers(metahook_seeds::controllers())
        .expect("the embedded manifests are valid")
        .into_iter()
        .find(|c| c.name == "hello")
        .expect("hello is embedded");
    Driven {
        config,
        parent: crate::decide::model::ResolvedType::new(
            "fraim.co.jp",
            "v1",
            "Hello",
            "helloes",
            true,
        ),
        children: vec![crate::decide::model::DrivenChild {
            resource: crate::decide::model::ResolvedType::new(
                "apps",
                "v1",
                "Deployment",
                "deployments",
                true,
            ),
            strategy: crate::config::UpdateStrategy::InPlace,
        }],
        shard_labels: Vec::new(),
        status_subresource: true,
    }
}
