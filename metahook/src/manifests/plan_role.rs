//! `manifests --plan-role`: the ClusterRole `plan --live` needs, and no
//! more: get, list and watch on the controllers' parents and children
//! (what it lists, and the related objects of the seeds' customize hooks,
//! which are child types too), and Metacontroller's ControllerRevisions
//! when a controller's children roll (the driver's next move depends on
//! them), nothing else. Its client refuses writes
//! anyway (`metahook_driver::client::read_only`); the role is what keeps a
//! credential lent to a CI job from writing by any other client. The
//! controllers are the binary's, or those the CompositeController and
//! DecoratorController files of a directory declare (`--controllers`).
//! What neither declares is not in it: the types a customize hook names
//! only when it answers, and the Secrets a webhook's credentials name.

use super::resources::resources_by_group;
use metahook_core::{Controller, Shape, UpdateStrategy};
use metahook_planner::config::{ControllerConfig, UpdateStrategyExt};
use metahook_planner::decide::revisions::revision_type;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};

/// Resources by API group.
type ByGroup = BTreeMap<String, BTreeSet<String>>;

/// The read-only ClusterRole named `name` for a plan of `controllers`.
pub(super) fn plan_role(controllers: &[Controller], name: &str) -> Value {
    let (parents, children) = resources_by_group(controllers);
    let mut read: ByGroup = parents;
    for (group, resources) in children {
        read.entry(group).or_default().extend(resources);
    }
    let rolls = controllers.iter().any(|c| match c.shape() {
        Shape::Composite { children, .. } => children.iter().any(|c| {
            matches!(
                c.update,
                UpdateStrategy::RollingRecreate | UpdateStrategy::RollingInPlace
            )
        }),
        Shape::Decorator { .. } => false,
    });
    if rolls {
        read_revisions(&mut read);
    }
    role(&read, name)
}

/// The same for the controllers of manifests read from files: their
/// parent (each of a decorator's resources) and child types.
pub(super) fn plan_role_of_manifests(configs: &[ControllerConfig], name: &str) -> Value {
    let mut read = ByGroup::new();
    for config in configs {
        let parents = std::iter::once(&config.parent).chain(&config.more_resources);
        let types = parents.map(|p| (&p.api_version, &p.resource)).chain(
            config
                .children
                .iter()
                .map(|c| (&c.api_version, &c.resource)),
        );
        for (api_version, resource) in types {
            // `apps/v1` is the group `apps`; `v1` the core group, "".
            let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
            read.entry(group.to_owned())
                .or_default()
                .insert(resource.clone());
        }
    }
    if configs
        .iter()
        .any(|c| c.children.iter().any(|c| c.update_strategy.is_rolling()))
    {
        read_revisions(&mut read);
    }
    role(&read, name)
}

/// Metacontroller's ControllerRevisions, which a rolling controller's
/// plan reads.
fn read_revisions(read: &mut ByGroup) {
    let api = revision_type().api;
    read.entry(api.group).or_default().insert(api.plural);
}

fn role(read: &ByGroup, name: &str) -> Value {
    let rules: Vec<Value> = read
        .iter()
        .map(|(group, resources)| {
            json!({"apiGroups": [group], "resources": resources, "verbs": ["get", "list", "watch"]})
        })
        .collect();
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": rules,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plan_reads_every_parent_and_child_type_and_writes_nothing() {
        let role = plan_role(metahook_seeds::controllers(), "seeds-plan");
        assert_eq!(role["metadata"]["name"], "seeds-plan");
        let rules = role["rules"].as_array().unwrap();
        for rule in rules {
            assert_eq!(rule["verbs"], json!(["get", "list", "watch"]), "{rule}");
        }
        let resources = resources(&role);
        let pair = |g: &str, r: &str| (g.to_owned(), r.to_owned());
        assert_eq!(
            resources,
            [
                pair("apps", "deployments"),
                pair("fraim.co.jp", "helloes"),
                pair("samplecontroller.k8s.io", "foos"),
                pair("zundokokiyoshi.kaitoy.github.com", "hikawas"),
                pair("zundokokiyoshi.kaitoy.github.com", "kiyoshis"),
                pair("zundokokiyoshi.kaitoy.github.com", "zundokos"),
            ],
            "parents and children, no subresource, no wildcard"
        );
    }

    /// (group, resource) of every rule, in order.
    fn resources(role: &Value) -> Vec<(String, String)> {
        role["rules"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|r| {
                let group = r["apiGroups"][0].as_str().unwrap().to_owned();
                r["resources"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(move |res| (group.clone(), res.as_str().unwrap().to_owned()))
            })
            .collect()
    }

    #[test]
    fn a_manifest_s_parent_and_child_types_are_read_by_their_group() {
        let composite = metahook_planner::config::parse(
            "propagation.yaml",
            r#"
apiVersion: metacontroller.k8s.io/v1alpha1
kind: CompositeController
metadata: {name: propagation}
spec:
  parentResource: {apiVersion: examples.metacontroller.io/v1alpha1, resource: configmappropagations}
  childResources:
    - {apiVersion: v1, resource: configmaps}
    - {apiVersion: apps/v1, resource: deployments}
  hooks:
    sync: {webhook: {url: "http://127.0.0.1:8080/sync"}}
"#,
        )
        .unwrap();
        let decorator = metahook_planner::config::parse(
            "per-pod.yaml",
            r#"
apiVersion: metacontroller.k8s.io/v1alpha1
kind: DecoratorController
metadata: {name: per-pod}
spec:
  resources:
    - {apiVersion: apps/v1, resource: statefulsets}
    - {apiVersion: v1, resource: pods}
  attachments:
    - {apiVersion: v1, resource: services}
  hooks:
    sync: {webhook: {url: "http://127.0.0.1:8080/sync"}}
"#,
        )
        .unwrap();
        let role = plan_role_of_manifests(&[composite, decorator], "dir-plan");
        assert_eq!(role["metadata"]["name"], "dir-plan");
        for rule in role["rules"].as_array().unwrap() {
            assert_eq!(rule["verbs"], json!(["get", "list", "watch"]), "{rule}");
        }
        let pair = |g: &str, r: &str| (g.to_owned(), r.to_owned());
        assert_eq!(
            resources(&role),
            [
                pair("", "configmaps"),
                pair("", "pods"),
                pair("", "services"),
                pair("apps", "deployments"),
                pair("apps", "statefulsets"),
                pair("examples.metacontroller.io", "configmappropagations"),
            ],
            "every parent, decorated and child type, by group"
        );
    }

    #[test]
    fn a_controller_whose_children_roll_reads_its_controller_revisions() {
        use k8s_openapi::api::apps::v1::Deployment;
        use metahook_seeds::hello::{Hello, finalize, sync};
        let rolling = Controller::composite::<Hello>("hello")
            .update::<Deployment>(UpdateStrategy::RollingRecreate)
            .sync(sync)
            .finalize(finalize)
            .build();
        let pair = |g: &str, r: &str| (g.to_owned(), r.to_owned());
        let revisions = pair("metacontroller.k8s.io", "controllerrevisions");
        let role = plan_role(std::slice::from_ref(&rolling), "rolling-plan");
        assert!(resources(&role).contains(&revisions), "{role:#}");
        let role = plan_role(metahook_seeds::controllers(), "seeds-plan");
        assert!(
            !resources(&role).contains(&revisions),
            "none of the seeds rolls: {role:#}"
        );

        let composite = metahook_planner::config::parse(
            "catset.yaml",
            r#"
apiVersion: metacontroller.k8s.io/v1alpha1
kind: CompositeController
metadata: {name: catset}
spec:
  parentResource: {apiVersion: ctl.enisoc.com/v1, resource: catsets}
  childResources:
    - {apiVersion: v1, resource: pods, updateStrategy: {method: RollingInPlace}}
  hooks:
    sync: {webhook: {url: "http://127.0.0.1:8080/sync"}}
"#,
        )
        .unwrap();
        let role = plan_role_of_manifests(&[composite], "catset-plan");
        for rule in role["rules"].as_array().unwrap() {
            assert_eq!(rule["verbs"], json!(["get", "list", "watch"]), "{rule}");
        }
        assert_eq!(
            resources(&role),
            [
                pair("", "pods"),
                pair("ctl.enisoc.com", "catsets"),
                revisions,
            ],
            "the parent, the child and the revisions, read only"
        );
    }
}
