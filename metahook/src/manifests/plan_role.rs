//! `manifests --plan-role`: the ClusterRole `plan --live` needs, and no
//! more: get, list and watch on the controllers' parents and children
//! (what it lists, and the related objects of the seeds' customize hooks,
//! which are child types too), nothing else. Its client refuses writes
//! anyway (`metahook_driver::client::read_only`); the role is what keeps a
//! credential lent to a CI job from writing by any other client.

use super::resources::resources_by_group;
use metahook_core::Controller;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};

/// The read-only ClusterRole named `name` for a plan of `controllers`.
pub(super) fn plan_role(controllers: &[Controller], name: &str) -> Value {
    let (parents, children) = resources_by_group(controllers);
    let mut read: BTreeMap<String, BTreeSet<String>> = parents;
    for (group, resources) in children {
        read.entry(group).or_default().extend(resources);
    }
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
        let resources: Vec<(String, String)> = rules
            .iter()
            .flat_map(|r| {
                let group = r["apiGroups"][0].as_str().unwrap().to_owned();
                r["resources"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(move |res| (group.clone(), res.as_str().unwrap().to_owned()))
            })
            .collect();
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
}
