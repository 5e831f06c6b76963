//! What is sent for a child: the server-side apply body, with the owner
//! reference that makes the parent its controller.

use crate::decide::model::Driven;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::ResourceExt;
use kube::core::DynamicObject;
use serde_json::Value;
use std::hash::Hasher;

/// Metacontroller's own annotation from its client-side apply; never sent
/// with a server-side apply.
pub const LAST_APPLIED: &str = "metacontroller.k8s.io/last-applied-configuration";

/// The fingerprint of the body the driver last applied to a child, written
/// with the apply itself: after a restart (or on a new leader) a child that
/// carries the fingerprint of what would be applied now, and still holds
/// every field of it, is left alone — the apply would change nothing. It
/// tells that our field manager owns exactly the body's fields, which the
/// cache (no `managedFields`, for memory) cannot tell.
pub const APPLIED: &str = "driver.metahook.dev/applied";

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
/// last-applied annotation. [`APPLIED`] is added by [`with_fingerprint`].
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
            // The parent's shard labels: the shard's child watch selects by
            // them too.
            let shard: Vec<(&String, &String)> = ctl
                .shard_labels
                .iter()
                .filter_map(|k| parent.labels().get_key_value(k))
                .collect();
            if !shard.is_empty()
                && let Some(labels) = object_at(meta, "labels")
            {
                for (k, v) in shard {
                    labels.insert(k.clone(), Value::from(v.as_str()));
                }
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

/// `body` with its fingerprint in [`APPLIED`], and the fingerprint.
pub(super) fn with_fingerprint(mut body: Value) -> (Value, u64) {
    let fingerprint = fingerprint(&body);
    if let Some(Value::Object(meta)) = body.get_mut("metadata")
        && let Some(annotations) = object_at(meta, "annotations")
    {
        annotations.insert(
            APPLIED.to_owned(),
            Value::from(fingerprint_text(fingerprint)),
        );
    }
    (body, fingerprint)
}

/// A hash of a body that is the same in every process and release (FNV-1a
/// over its JSON text): it is written into the child.
pub(super) fn fingerprint(body: &Value) -> u64 {
    let mut hasher = fnv::FnvHasher::default();
    hasher.write(body.to_string().as_bytes());
    hasher.finish()
}

/// How a fingerprint is written in [`APPLIED`].
pub(super) fn fingerprint_text(fingerprint: u64) -> String {
    format!("{fingerprint:016x}")
}

/// The map under `key`, made empty if absent; `None` if it is not a map.
fn object_at<'a>(
    map: &'a mut serde_json::Map<String, Value>,
    key: &str,
) -> Option<&'a mut serde_json::Map<String, Value>> {
    map.entry(key)
        .or_insert_with(|| Value::Object(serde_json::Map::new()))
        .as_object_mut()
}
