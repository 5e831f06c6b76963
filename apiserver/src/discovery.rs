//! Discovery: `/apis` (the group list), `/apis/<group>` and
//! `/apis/<group>/<version>` (the `APIResourceList` kube-apiserver's
//! aggregator fetches to decide the APIService is Available, and to list
//! `reconciles` in `kubectl api-resources`). Constant documents: answered
//! at once, whatever the driver is doing.

use crate::resource::{GROUP, GROUP_VERSION, KIND, RESOURCE, SINGULAR, VERSION};
use serde_json::{Value, json};

fn preferred() -> Value {
    json!({"groupVersion": GROUP_VERSION, "version": VERSION})
}

/// `/apis/<group>`.
pub fn group() -> Value {
    json!({
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": GROUP,
        "versions": [preferred()],
        "preferredVersion": preferred(),
    })
}

/// `/apis`.
pub fn groups() -> Value {
    let mut group = group();
    if let Some(g) = group.as_object_mut() {
        g.remove("kind");
        g.remove("apiVersion");
    }
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": [group]})
}

/// `/apis/<group>/<version>`.
pub fn resources() -> Value {
    json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": GROUP_VERSION,
        "resources": [{
            "name": RESOURCE,
            "singularName": SINGULAR,
            "namespaced": true,
            "kind": KIND,
            // Read-only: the records are the driver's memory, not state
            // anyone sets. No watch (yet): `kubectl get -w` says so.
            "verbs": ["get", "list"],
            "categories": ["metahook"],
        }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_resource_list_names_the_read_only_namespaced_resource() {
        let list = resources();
        assert_eq!(list["groupVersion"], "driver.metahook.dev/v1alpha1");
        let r = &list["resources"][0];
        assert_eq!(
            (r["name"].as_str(), r["kind"].as_str()),
            (Some("reconciles"), Some("Reconcile"))
        );
        assert_eq!(r["namespaced"], true);
        assert_eq!(r["verbs"], json!(["get", "list"]));
        assert_eq!(
            groups()["groups"][0]["preferredVersion"]["version"],
            "v1alpha1"
        );
        assert_eq!(group()["name"], "driver.metahook.dev");
    }
}
