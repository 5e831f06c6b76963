//! `metahook plan --live` on a cluster the driver has converged: with the
//! driver stopped, the plan finds nothing to change (exit 0); after one
//! Hello's spec changes, it reports that Hello's Deployment change and
//! nothing for the others (exit 2). It runs as a user of its own, in no
//! group, bound only to the ClusterRole `metahook manifests --plan-role`
//! prints; the API server's audit log shows that user read and never
//! wrote. The helpers here serve `plan_http.rs` too.

use crate::support::*;
use k8s_openapi::api::authorization::v1::SubjectAccessReview;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

const HELLOS: usize = 3;

/// What one `metahook plan` run said.
pub struct Planned {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// `metahook plan --live <args>` as `kubeconfig`'s user.
pub fn plan_live(kubeconfig: &Path, args: &[&str]) -> Planned {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_metahook"))
        .args(["plan", "--live"])
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .output()
        .expect("running metahook plan");
    let planned = Planned {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8(output.stdout).expect("UTF-8 output"),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    };
    eprintln!("plan {args:?}:\n{}{}", planned.stdout, planned.stderr);
    planned
}

/// `metahook plan --live -n <ns> <more>` as `kubeconfig`'s user: its exit
/// code and standard output.
fn plan(kubeconfig: &Path, ns: &str, more: &[&str]) -> (i32, String) {
    let planned = plan_live(kubeconfig, &[["--namespace", ns].as_slice(), more].concat());
    (planned.code, planned.stdout)
}

/// A kubeconfig for `user` in no group: RBAC grants it nothing but what a
/// test binds to it and what every authenticated user may (discovery).
/// `kubeconfig_as` puts its users in system:masters.
pub fn kubeconfig_of_nobody(user: &str) -> PathBuf {
    let text = control(&format!("/kubeconfig?user={user}"));
    let path = std::env::temp_dir().join(format!(
        "metahook-e2e-{user}-{}.kubeconfig",
        std::process::id()
    ));
    std::fs::write(&path, text).expect("writing a kubeconfig");
    path
}

/// The ClusterRole `metahook manifests --plan-role <args>` prints, created
/// through the RBAC API and bound to `user` alone; returned once `user`
/// may list `parents` (the authorizer sees a new binding moments after it
/// is stored). Its name, for [`unbind_plan_role`].
pub async fn bind_plan_role(
    client: &Client,
    user: &str,
    args: &[&str],
    parents: &ApiResource,
) -> String {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_metahook"))
        .args(["manifests", "--plan-role"])
        .args(args)
        .output()
        .expect("running metahook manifests");
    assert!(
        output.status.success(),
        "manifests --plan-role: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8(output.stdout).expect("UTF-8 output");
    let role: Value = serde_saphyr::from_str(&text).expect("one YAML document");
    assert_eq!(role["kind"], "ClusterRole", "{text}");
    let verbs: Vec<&Value> = role["rules"]
        .as_array()
        .expect("rules")
        .iter()
        .flat_map(|r| r["verbs"].as_array().expect("verbs"))
        .collect();
    assert!(
        verbs
            .iter()
            .all(|v| ["get", "list", "watch"].contains(&v.as_str().unwrap_or(""))),
        "a read-only role: {text}"
    );
    let name = role["metadata"]["name"]
        .as_str()
        .expect("a name")
        .to_owned();
    let apply = PatchParams::apply("metahook-e2e").force();
    let roles: Api<ClusterRole> = Api::all(client.clone());
    roles
        .patch(&name, &apply, &Patch::Apply(&role))
        .await
        .expect("creating the plan role");
    let binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    });
    let bindings: Api<ClusterRoleBinding> = Api::all(client.clone());
    bindings
        .patch(&name, &apply, &Patch::Apply(&binding))
        .await
        .expect("binding the plan role");
    // Asked as the admin (a SubjectAccessReview, through the authorizer
    // the plan's requests meet): a request of the user's own would be one
    // more in the audit log that is not the plan's.
    let reviews: Api<SubjectAccessReview> = Api::all(client.clone());
    let review: SubjectAccessReview = serde_json::from_value(json!({
        "spec": {"user": user, "resourceAttributes": {
            "group": parents.group, "resource": parents.plural, "verb": "list",
        }},
    }))
    .expect("a SubjectAccessReview");
    wait_for("the plan role to be granted", || async {
        let answer = reviews.create(&PostParams::default(), &review).await.ok()?;
        answer.status?.allowed.then_some(())
    })
    .await;
    name
}

/// Removes what [`bind_plan_role`] made.
pub async fn unbind_plan_role(client: &Client, name: &str) {
    let _ = Api::<ClusterRoleBinding>::all(client.clone())
        .delete(name, &DeleteParams::default())
        .await;
    let _ = Api::<ClusterRole>::all(client.clone())
        .delete(name, &DeleteParams::default())
        .await;
}

/// Fails unless every request `user` made, as the audit log has them, was
/// a read (get, list, watch) through the plan's client (its User-Agent);
/// their number.
/// A JSON plan's summary: parents, unchanged, changed, refused or failed.
pub fn counts(plan: &Value) -> [u64; 4] {
    ["parents", "unchanged", "changed", "failed"]
        .map(|key| plan["summary"][key].as_u64().unwrap_or(u64::MAX))
}

pub fn assert_only_reads(user: &str) -> usize {
    let requests: Vec<(String, String)> = audit()
        .iter()
        .filter(|e| e["user"]["username"] == user)
        .map(|e| {
            (
                e["verb"].as_str().unwrap_or_default().to_owned(),
                e["userAgent"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert!(!requests.is_empty(), "the audit log shows the plan's reads");
    let not_reads: Vec<&(String, String)> = requests
        .iter()
        .filter(|(verb, agent)| {
            !matches!(verb.as_str(), "get" | "list" | "watch")
                || !agent.starts_with("metahook-plan/")
        })
        .collect();
    assert!(
        not_reads.is_empty(),
        "the plan wrote, or read through another client: {not_reads:?}"
    );
    requests.len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_live_reports_exactly_the_changed_parent_and_never_writes() {
    let (admin_config, client) = cluster_with_crds().await;
    let ns = namespace(&client, "e2e-plan").await;
    let driver = start_driver(&admin_config).await;
    let hellos = names("hello", HELLOS);
    create_hellos(&client, &ns, &hellos, 2).await;
    wait_converged("every Hello ready", &client, &ns, &hellos, 2).await;
    drop(driver);

    let user = "metahook-plan-e2e";
    let as_planner = kubeconfig_of_nobody(user);
    let helloes = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("fraim.co.jp", "v1", "Hello"),
        "helloes",
    );
    let role = bind_plan_role(&client, user, &[], &helloes).await;
    let (code, text) = plan(&as_planner, &ns, &[]);
    assert_eq!(code, 0, "a converged cluster plans no change:\n{text}");
    assert!(
        text.starts_with(&format!(
            "No changes: {HELLOS} parents, each as the driver would leave it.\n"
        )),
        "{text}"
    );

    // One Hello scaled while nothing drives.
    let changed = &hellos[1];
    hello_api(&client, &ns)
        .patch(
            changed,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await
        .expect("scaling a Hello");
    let (code, out) = plan(&as_planner, &ns, &["--output", "json"]);
    assert_eq!(code, 2, "one changed Hello is a change planned:\n{out}");
    let plan: Value = serde_json::from_str(&out).expect("one JSON document");
    let parents = plan["parents"].as_array().expect("parents");
    assert_eq!(parents.len(), 1, "only the scaled Hello changes: {plan:#}");
    let parent = &parents[0];
    assert_eq!(parent["name"], changed.as_str());
    assert_eq!(parent["hook"], "sync");
    let steps = parent["steps"].as_array().expect("steps");
    let applies: Vec<&Value> = steps.iter().filter(|s| s["op"] == "apply").collect();
    assert_eq!(
        applies,
        [&json!({
            "op": "apply", "kind": "Deployment", "namespace": ns, "name": changed,
            "changed": [{"path": "spec.replicas", "from": 2, "to": 3}],
        })],
        "the Deployment's replicas and nothing else: {plan:#}"
    );
    // Besides, only what the status of a changed spec says: its new
    // generation, and the Ready condition while the Deployment catches up.
    let others: Vec<&Value> = steps
        .iter()
        .filter(|s| !matches!(s["op"].as_str(), Some("apply" | "writeStatus" | "event")))
        .collect();
    assert!(others.is_empty(), "no other operation: {plan:#}");
    let hellos = HELLOS as u64;
    assert_eq!(counts(&plan), [hellos, hellos - 1, 1, 0], "{plan:#}");

    // The plan's user only read, and what it read was through its own
    // client (the User-Agent the read-only client sends).
    let requests = assert_only_reads(user);
    eprintln!("the plan's requests, two plans of {HELLOS} Hellos: {requests}");
    unbind_plan_role(&client, &role).await;

    // The driver back, to finalize the Hellos.
    let driver = start_driver(&admin_config).await;
    delete_all_hellos(&client, &ns).await;
    drop(driver);
    drop_namespace(&client, &ns).await;
}
