//! What is sent for a child: the server-side apply body, with the owner
//! reference that makes the parent its controller.

use crate::model::Driven;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::ResourceExt;
use kube::core::DynamicObject;
use serde_json::Value;

/// Metacontroller's own annotation from its client-side apply; never sent
/// with a server-side apply.
pub const LAST_APPLIED: &str = "metacontroller.k8s.io/last-applied-configuration";

/// The controller owner reference a child of `parent` carries. Not kube's
/// `Resource::controller_owner_ref`: it leaves `blockOwnerDeletion` unset
/// and gives nothing for a parent without a name or UID.
pub fn owner_reference(ctl: &Driven, parent: &DynamicObject) -> OwnerReference {
    OwnerReference {
        api_version: ctl.parent.api.api_version.clone(),
        kind: ctl.parent.api.kind.clone(),
        name: parent.name_any(),
        uid: parent.uid().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// The server-side apply body: the desired object with the controller owner
/// reference, without status, server-populated metadata or Metacontroller's
/// last-applied annotation.
pub(super) fn apply_body(ctl: &Driven, parent: &DynamicObject, desired: &Value) -> Value {
    let mut body = desired.clone();
    if let Some(map) = body.as_object_mut() {
        map.remove("status");
        if let Some(Value::Object(meta)) = map.get_mut("metadata") {
            for key in [
                "uid",
                "resourceVersion",
                "generation",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "managedFields",
                "selfLink",
            ] {
                meta.remove(key);
            }
            if let Some(Value::Object(annotations)) = meta.get_mut("annotations") {
                annotations.remove(LAST_APPLIED);
            }
            let owner = owner_reference(ctl, parent);
            let refs = meta
                .entry("ownerReferences")
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(refs) = refs {
                let present = refs
                    .iter()
                    .any(|r| r.get("uid").and_then(Value::as_str) == Some(owner.uid.as_str()));
                if !present {
                    refs.push(serde_json::to_value(&owner).unwrap_or(Value::Null));
                }
            }
        }
    }
    body
}
