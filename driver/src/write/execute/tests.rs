//! Executor tests: each plays the API server (`test_support/scripted_api.rs`), taking the
//! requests the executor sends, checking them, and answering.

use super::{ExecuteError, Executor};
use crate::decide::plan::{AppliedMemory, DeleteReason, Op, Target};
use crate::observe::metrics::DriverMetrics;
use crate::test_support::scripted_api::{
    answer, mock_client, namespace_terminating_body, no_further_request, scripted, status_body,
};
use crate::test_support::{Demo, parent};
use crate::write::memory::ApplyMemory;
use kube::Client;
use serde_json::json;
use std::sync::Arc;

fn executor(client: Client) -> (Executor, Arc<ApplyMemory>) {
    let memory = Arc::new(ApplyMemory::new());
    (
        Executor::new(
            client,
            None,
            memory.clone(),
            Arc::new(DriverMetrics::default()),
        ),
        memory,
    )
}

fn target(name: &str, uid: &str) -> Target {
    Target {
        type_index: 0,
        namespace: Some("shop".to_owned()),
        name: name.to_owned(),
        uid: uid.to_owned(),
    }
}

#[tokio::test]
async fn finalizer_add_is_a_guarded_json_patch() {
    let (client, mut api) = mock_client();
    let (exec, _) = executor(client);
    let ctl = Demo::default().build();
    let ops = vec![Op::AddFinalizer {
        before: None,
        after: vec!["metacontroller.io/compositecontroller-demo".to_owned()],
    }];
    let (outcome, seen) = scripted(exec.execute(&ctl, parent(), ops), async {
        let mut updated = serde_json::to_value(parent()).unwrap();
        updated["metadata"]["finalizers"] = json!(["metacontroller.io/compositecontroller-demo"]);
        answer(&mut api, 200, updated).await
    })
    .await;
    no_further_request(&mut api);
    let outcome = outcome.unwrap();
    assert_eq!(seen.method, "PATCH");
    assert_eq!(seen.path, "/apis/example.com/v1/namespaces/shop/things/p");
    assert_eq!(seen.content_type, "application/json-patch+json");
    assert_eq!(
        seen.body,
        json!([
            {"op": "test", "path": "/metadata/uid", "value": "p1"},
            {"op": "test", "path": "/metadata/finalizers", "value": null},
            {"op": "add", "path": "/metadata/finalizers", "value": ["metacontroller.io/compositecontroller-demo"]},
        ])
    );
    // The executor continues with the parent the API server returned.
    assert_eq!(
        outcome.parent.metadata.finalizers,
        Some(vec![
            "metacontroller.io/compositecontroller-demo".to_owned()
        ])
    );
    assert!(outcome.errors.is_empty());
}

#[tokio::test]
async fn a_failed_finalizer_change_stops_the_plan() {
    let (client, mut api) = mock_client();
    let (exec, _) = executor(client);
    let ctl = Demo::default().build();
    let ops = vec![
        Op::AddFinalizer {
            before: None,
            after: vec!["f".to_owned()],
        },
        Op::WriteStatus { status: json!({}) },
    ];
    let (outcome, _) = scripted(exec.execute(&ctl, parent(), ops), async {
        answer(&mut api, 409, status_body(409, "Conflict")).await
    })
    .await;
    no_further_request(&mut api);
    assert!(
        matches!(outcome, Err(ExecuteError::AddFinalizer { .. })),
        "{outcome:?}"
    );
    // Nothing else was sent: the status write never happened.
    drop(exec);
    assert!(api.next_request().await.is_none());
}

#[tokio::test]
async fn apply_is_forced_server_side_apply_by_metahook_and_remembered() {
    let (client, mut api) = mock_client();
    let (exec, memory) = executor(client);
    let ctl = Demo::default().build();
    let body = json!({"apiVersion": "apps/v1", "kind": "Deployment",
                      "metadata": {"name": "web", "namespace": "shop"}, "spec": {"replicas": 2}});
    let ops = vec![Op::ApplyChild {
        type_index: 0,
        namespace: Some("shop".to_owned()),
        name: "web".to_owned(),
        body: body.clone(),
        fingerprint: 42,
    }];
    let (outcome, seen) = scripted(exec.execute(&ctl, parent(), ops), async {
        let mut stored = body.clone();
        stored["metadata"]["uid"] = json!("uid-web");
        stored["metadata"]["generation"] = json!(1);
        stored["metadata"]["resourceVersion"] = json!("11");
        answer(&mut api, 200, stored).await
    })
    .await;
    no_further_request(&mut api);
    assert!(outcome.unwrap().errors.is_empty());
    assert_eq!(seen.method, "PATCH");
    assert_eq!(seen.path, "/apis/apps/v1/namespaces/shop/deployments/web");
    let mut query: Vec<&str> = seen.query.split('&').filter(|p| !p.is_empty()).collect();
    query.sort_unstable();
    assert_eq!(query, ["fieldManager=metahook", "force=true"]);
    assert_eq!(seen.content_type, "application/apply-patch+yaml");
    assert_eq!(seen.body, body);
    let applied = memory.applied(0, Some("shop"), "web").unwrap();
    assert_eq!(
        (
            applied.fingerprint,
            applied.uid.as_str(),
            applied.generation
        ),
        (42, "uid-web", 1)
    );
}

#[tokio::test]
async fn delete_carries_the_uid_precondition_and_background_propagation() {
    let (client, mut api) = mock_client();
    let (exec, _) = executor(client);
    let ctl = Demo::default().build();
    let ops = vec![Op::DeleteChild {
        child: target("extra", "uid-extra"),
        reason: DeleteReason::NotDesired,
    }];
    let (outcome, seen) = scripted(exec.execute(&ctl, parent(), ops), async {
        answer(&mut api, 200, status_body(200, "")).await
    })
    .await;
    no_further_request(&mut api);
    assert!(outcome.unwrap().errors.is_empty());
    assert_eq!(seen.method, "DELETE");
    assert_eq!(seen.path, "/apis/apps/v1/namespaces/shop/deployments/extra");
    assert_eq!(
        seen.body,
        json!({"propagationPolicy": "Background", "preconditions": {"uid": "uid-extra"}})
    );
}

#[tokio::test]
async fn status_is_written_through_the_subresource_with_observed_generation() {
    let (client, mut api) = mock_client();
    let (exec, memory) = executor(client);
    let ctl = Demo::default().build();
    let status = json!({"ready": true, "observedGeneration": 2});
    let ops = vec![Op::WriteStatus {
        status: status.clone(),
    }];
    let (outcome, seen) = scripted(exec.execute(&ctl, parent(), ops), async {
        let mut updated = serde_json::to_value(parent()).unwrap();
        updated["status"] = json!({"ready": true, "observedGeneration": 2});
        answer(&mut api, 200, updated).await
    })
    .await;
    no_further_request(&mut api);
    let outcome = outcome.unwrap();
    assert_eq!(seen.method, "PATCH");
    assert_eq!(
        seen.path,
        "/apis/example.com/v1/namespaces/shop/things/p/status"
    );
    assert_eq!(seen.content_type, "application/json-patch+json");
    assert_eq!(
        seen.body,
        json!([
            {"op": "test", "path": "/metadata/uid", "value": "p1"},
            {"op": "add", "path": "/status", "value": status},
        ])
    );
    assert_eq!(outcome.parent.data["status"]["observedGeneration"], 2);
    // Remembered against the version it was written on (the parent's, 10),
    // for a reconcile that starts before the cache sees the write.
    assert_eq!(memory.written_status("p1", "10"), Some(status));
    assert_eq!(memory.written_status("p1", "11"), None);
}

#[tokio::test]
async fn conflicts_and_not_found_follow_metacontroller() {
    // docs/metacontroller.md §5: apply Conflict and delete NotFound
    // swallowed; a delete Conflict (UID precondition: a successor) is an
    // error; the status is still written after a failed child operation, and
    // its Conflict is swallowed.
    let (client, mut api) = mock_client();
    let (exec, _) = executor(client);
    let ctl = Demo::default().build();
    let apply = |name: &str| Op::ApplyChild {
        type_index: 0,
        namespace: Some("shop".to_owned()),
        name: name.to_owned(),
        body: json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name}}),
        fingerprint: 1,
    };
    let delete = |name: &str| Op::DeleteChild {
        child: target(name, &format!("uid-{name}")),
        reason: DeleteReason::NotDesired,
    };
    let ops = vec![
        delete("gone"),
        delete("replaced"),
        apply("contended"),
        apply("broken"),
        Op::WriteStatus {
            status: json!({"observedGeneration": 2}),
        },
    ];
    let (outcome, seen) = scripted(exec.execute(&ctl, parent(), ops), async {
        vec![
            answer(&mut api, 404, status_body(404, "NotFound")).await,
            answer(&mut api, 409, status_body(409, "Conflict")).await,
            answer(&mut api, 409, status_body(409, "Conflict")).await,
            answer(&mut api, 500, status_body(500, "InternalError")).await,
            answer(&mut api, 409, status_body(409, "Conflict")).await,
        ]
    })
    .await;
    no_further_request(&mut api);
    let outcome = outcome.unwrap();
    let paths: Vec<_> = seen
        .iter()
        .map(|s| s.path.rsplit('/').next().unwrap().to_owned())
        .collect();
    assert_eq!(paths, ["gone", "replaced", "contended", "broken", "status"]);
    let errors: Vec<String> = outcome.errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        errors,
        [
            "deleting Deployment replaced failed",
            "applying Deployment broken failed"
        ]
    );
}

#[tokio::test]
async fn status_write_of_a_gone_or_replaced_parent_is_not_an_error() {
    for (code, reason) in [(404, "NotFound"), (422, "Invalid")] {
        let (client, mut api) = mock_client();
        let (exec, _) = executor(client);
        let ctl = Demo::default().build();
        let ops = vec![Op::WriteStatus { status: json!({}) }];
        let (outcome, _) = scripted(exec.execute(&ctl, parent(), ops), async {
            answer(&mut api, code, status_body(code, reason)).await
        })
        .await;
        no_further_request(&mut api);
        assert!(outcome.unwrap().errors.is_empty(), "{code}");
    }
    let (client, mut api) = mock_client();
    let (exec, _) = executor(client);
    let ops = vec![Op::WriteStatus { status: json!({}) }];
    let ctl = Demo::default().build();
    let (outcome, _) = scripted(exec.execute(&ctl, parent(), ops), async {
        answer(&mut api, 500, status_body(500, "InternalError")).await
    })
    .await;
    no_further_request(&mut api);
    assert!(matches!(
        outcome.unwrap().errors.as_slice(),
        [ExecuteError::WriteStatus { .. }]
    ));
}

#[tokio::test]
async fn adoption_verifies_the_parent_live_first() {
    let (client, mut api) = mock_client();
    let (exec, _) = executor(client);
    let ctl = Demo::default().build();
    let ops = vec![
        Op::VerifyParent,
        Op::Adopt {
            child: target("orphan", "uid-orphan"),
            before: None,
            after: vec![crate::decide::plan::owner_reference(&ctl, &parent())],
        },
    ];
    let (outcome, seen) = scripted(exec.execute(&ctl, parent(), ops), async {
        let get = answer(&mut api, 200, serde_json::to_value(parent()).unwrap()).await;
        let adopt = answer(
            &mut api,
            200,
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "orphan", "namespace": "shop"}}),
        )
        .await;
        (get, adopt)
    })
    .await;
    no_further_request(&mut api);
    assert!(outcome.unwrap().errors.is_empty());
    let (get, adopt) = seen;
    assert_eq!(
        (get.method.as_str(), get.path.as_str()),
        ("GET", "/apis/example.com/v1/namespaces/shop/things/p")
    );
    assert_eq!(adopt.method, "PATCH");
    assert_eq!(
        adopt.body[1],
        json!({"op": "test", "path": "/metadata/ownerReferences", "value": null})
    );
    assert_eq!(adopt.body[2]["value"][0]["uid"], "p1");
    assert_eq!(adopt.body[2]["value"][0]["controller"], true);

    // A parent replaced meanwhile (other UID): nothing is adopted.
    let (client, mut api) = mock_client();
    let (exec, _) = executor(client);
    let ops = vec![
        Op::VerifyParent,
        Op::Adopt {
            child: target("orphan", "uid-orphan"),
            before: None,
            after: vec![],
        },
    ];
    let (outcome, _) = scripted(exec.execute(&ctl, parent(), ops), async {
        let mut other = serde_json::to_value(parent()).unwrap();
        other["metadata"]["uid"] = json!("p2");
        answer(&mut api, 200, other).await
    })
    .await;
    no_further_request(&mut api);
    assert!(matches!(outcome, Err(ExecuteError::ParentChanged { .. })));
}

#[tokio::test]
async fn releasing_a_child_that_is_gone_is_done_and_a_failed_adopt_is_reported() {
    let (client, mut api) = mock_client();
    let (exec, _) = executor(client);
    let ctl = Demo::default().build();
    let ops = vec![
        Op::Release {
            child: target("gone", "uid-gone"),
            before: None,
            after: vec![],
        },
        Op::Adopt {
            child: target("raced", "uid-raced"),
            before: None,
            after: vec![crate::decide::plan::owner_reference(&ctl, &parent())],
        },
    ];
    let (outcome, _) = scripted(exec.execute(&ctl, parent(), ops), async {
        answer(&mut api, 404, status_body(404, "NotFound")).await;
        answer(&mut api, 422, status_body(422, "Invalid")).await
    })
    .await;
    no_further_request(&mut api);
    let errors = outcome.unwrap().errors;
    assert_eq!(errors.len(), 1);
    assert!(matches!(&errors[0], ExecuteError::AdoptChild { name, .. } if name == "raced"));
    // The adopt's `test` met a changed object: a stale cache, retried quietly.
    assert!(errors[0].is_stale_cache());
}

#[tokio::test]
async fn a_decorators_object_patch_goes_to_the_object_and_a_failed_test_is_a_stale_cache() {
    let (client, mut api) = mock_client();
    let (exec, _) = executor(client);
    let ctl = crate::test_support::decorator(false, false);
    let pod = crate::test_support::Obj::pod().build();
    let patch = vec![
        json!({"op": "test", "path": "/metadata/uid", "value": "pod1"}),
        json!({"op": "test", "path": "/metadata/labels", "value": null}),
        json!({"op": "add", "path": "/metadata/labels", "value": {"tier": "front"}}),
    ];
    let ops = vec![
        Op::PatchObject {
            patch: patch.clone(),
            changed: vec!["metadata.labels.tier".to_owned()],
        },
        Op::DeleteChild {
            child: target("web-0", "svc1"),
            reason: DeleteReason::NotDesired,
        },
    ];
    let (outcome, seen) = scripted(exec.execute(&ctl, pod, ops), async {
        let seen = answer(&mut api, 422, status_body(422, "Invalid")).await;
        // The plan goes on after a failed object patch.
        answer(&mut api, 200, status_body(200, "Success")).await;
        seen
    })
    .await;
    no_further_request(&mut api);
    assert_eq!(seen.method, "PATCH");
    assert_eq!(seen.path, "/api/v1/namespaces/shop/pods/web-0");
    assert_eq!(seen.content_type, "application/json-patch+json");
    assert_eq!(seen.body, json!(patch));
    let errors = outcome.unwrap().errors;
    assert!(
        matches!(&errors[..], [ExecuteError::PatchObject { .. }]),
        "{errors:?}"
    );
    assert!(errors[0].is_stale_cache());
}

#[tokio::test]
async fn a_revision_is_adopted_and_released_by_guarded_patches_and_a_failed_adopt_stops() {
    use crate::decide::plan::RevisionWrite;
    let (client, mut api) = mock_client();
    let (exec, _) = executor(client);
    let ctl = Demo::default().build();
    let owners = |adopt| {
        Op::Revision(RevisionWrite::SetOwners {
            name: if adopt { "orphan" } else { "gone" }.to_owned(),
            uid: "uid-rev".to_owned(),
            before: None,
            after: if adopt {
                vec![crate::decide::plan::owner_reference(&ctl, &parent())]
            } else {
                vec![]
            },
            adopt,
        })
    };
    let ops = vec![owners(false), owners(true), owners(true)];
    let (outcome, seen) = scripted(exec.execute(&ctl, parent(), ops), async {
        // The release finds it gone: done.
        answer(&mut api, 404, status_body(404, "NotFound")).await;
        let adopt = answer(&mut api, 200, json!({"metadata": {"name": "orphan"}})).await;
        // The next adoption's `test` fails: the plan stops there.
        answer(&mut api, 422, status_body(422, "Invalid")).await;
        adopt
    })
    .await;
    no_further_request(&mut api);
    assert_eq!(
        (seen.method.as_str(), seen.path.as_str()),
        (
            "PATCH",
            "/apis/metacontroller.k8s.io/v1alpha1/namespaces/shop/controllerrevisions/orphan"
        )
    );
    assert_eq!(
        seen.body[0],
        json!({"op": "test", "path": "/metadata/uid", "value": "uid-rev"})
    );
    assert_eq!(
        seen.body[1],
        json!({"op": "test", "path": "/metadata/ownerReferences", "value": null})
    );
    assert_eq!(seen.body[2]["value"][0]["uid"], "p1");
    let err = outcome.map(|_| ()).unwrap_err();
    assert!(
        matches!(&err, ExecuteError::WriteRevision { verb: "adopting", name, .. } if name == "orphan"),
        "{err:?}"
    );
    assert!(err.is_stale_cache());
}

#[test]
fn a_revision_refused_in_a_namespace_being_deleted_is_a_quiet_retry() {
    // Seen on the real API server at the end of the rolling e2e test: a
    // ControllerRevision created in a namespace being deleted is refused
    // as a child is (403, cause NamespaceTerminating), and was logged as
    // a failure with a Warning that could not be recorded either.
    let status: kube::core::Status = serde_json::from_value(namespace_terminating_body(
        "controllerrevisions.metacontroller.k8s.io",
        "r",
    ))
    .unwrap();
    let revision = ExecuteError::WriteRevision {
        verb: "creating",
        name: "r".to_owned(),
        source: kube::Error::Api(Box::new(status)),
    };
    assert!(revision.is_namespace_terminating());
}

#[tokio::test]
async fn each_call_is_counted_by_the_code_the_api_server_answered() {
    // kube's Api gives no code: a 201 is Ok, and a delete's 404 is done.
    // Counted through the client's layer, as the driver builds its clients.
    let mut registry = prometheus_client::registry::Registry::with_prefix("metahook");
    let metrics = Arc::new(DriverMetrics::register(
        registry.sub_registry_with_prefix("driver"),
    ));
    let (service, mut api) = tower_test::mock::pair();
    let counted = tower::ServiceBuilder::new()
        .layer(crate::client::responses::CountResponsesLayer::new(
            metrics.clone(),
        ))
        .service(service);
    let client = Client::new(counted, "default");
    let exec = Executor::new(client, None, Arc::new(ApplyMemory::new()), metrics);
    let ctl = Demo::default().build();
    let ops = vec![
        Op::DeleteChild {
            child: target("gone", "uid-gone"),
            reason: DeleteReason::NotDesired,
        },
        Op::ApplyChild {
            type_index: 0,
            namespace: Some("shop".to_owned()),
            name: "new".to_owned(),
            body: json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "new"}}),
            fingerprint: 1,
        },
    ];
    let created = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "new", "namespace": "shop", "uid": "uid-new", "resourceVersion": "5"}});
    let (outcome, _) = scripted(exec.execute(&ctl, parent(), ops), async {
        vec![
            answer(&mut api, 404, status_body(404, "NotFound")).await,
            answer(&mut api, 201, created).await,
        ]
    })
    .await;
    assert!(outcome.unwrap().errors.is_empty());
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    for line in [
        "operation=\"delete\",kind=\"Deployment\",code=\"404\"} 1",
        "operation=\"apply\",kind=\"Deployment\",code=\"201\"} 1",
    ] {
        assert!(text.contains(line), "missing {line} in\n{text}");
    }
}
