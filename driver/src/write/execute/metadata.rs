//! The executor's guarded edits of an object's metadata: the parent's
//! finalizers and a child's owner references, each a JSON patch that
//! `test`s the UID and the list as read, so a stale cache fails (422)
//! instead of overwriting.

use super::ExecuteError;
use super::error::status_code;
use super::executor::{Executor, patch_from};
use crate::decide::model::Driven;
use crate::decide::plan::Target;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::ResourceExt;
use kube::api::{DynamicObject, Patch, PatchParams};
use serde_json::json;

/// Owner references from `before` to `after`, on the object with UID
/// `uid` only: a stale cache fails the `test`s instead of overwriting.
pub(super) fn owners_patch(
    uid: &str,
    before: Option<Vec<OwnerReference>>,
    after: Vec<OwnerReference>,
) -> Result<json_patch::Patch, ExecuteError> {
    patch_from(json!([
        {"op": "test", "path": "/metadata/uid", "value": uid},
        {"op": "test", "path": "/metadata/ownerReferences", "value": before},
        {"op": "add", "path": "/metadata/ownerReferences", "value": after},
    ]))
}

impl Executor {
    pub(super) async fn set_finalizers(
        &self,
        ctl: &Driven,
        parent: &DynamicObject,
        before: Option<Vec<String>>,
        after: Vec<String>,
        adding: bool,
    ) -> Result<DynamicObject, ExecuteError> {
        // The `test`s make this a compare-and-swap on the cached object: a
        // stale cache fails (422) and the reconcile is retried.
        let patch = patch_from(json!([
            {"op": "test", "path": "/metadata/uid", "value": parent.metadata.uid},
            {"op": "test", "path": "/metadata/finalizers", "value": before},
            {"op": "add", "path": "/metadata/finalizers", "value": after},
        ]))?;
        let name = parent.name_any();
        let result = self
            .parent_api(ctl, parent)
            .patch(&name, &PatchParams::default(), &Patch::Json::<()>(patch))
            .await;
        let operation = if adding {
            "add_finalizer"
        } else {
            "remove_finalizer"
        };
        self.count(ctl, operation, &ctl.parent.api.kind, &result);
        let parent_key = format!(
            "{} {}",
            ctl.parent.api.kind,
            crate::decide::model::namespaced_name(parent)
        );
        result.map_err(|source| {
            if adding {
                ExecuteError::AddFinalizer {
                    parent: parent_key,
                    source,
                }
            } else {
                ExecuteError::RemoveFinalizer {
                    parent: parent_key,
                    source,
                }
            }
        })
    }

    pub(super) async fn set_owners(
        &self,
        ctl: &Driven,
        child: &Target,
        before: Option<Vec<OwnerReference>>,
        after: Vec<OwnerReference>,
        adopting: bool,
    ) -> Result<(), ExecuteError> {
        let (api, kind) = self.child_api(ctl, child.type_index, child.namespace.as_deref())?;
        let patch = owners_patch(&child.uid, before, after)?;
        let result = api
            .patch(
                &child.name,
                &PatchParams::default(),
                &Patch::Json::<()>(patch),
            )
            .await;
        let operation = if adopting { "adopt" } else { "release" };
        self.count(ctl, operation, &kind, &result);
        let name = child.name.clone();
        match result {
            Ok(_) => Ok(()),
            // Releasing something already gone is done
            // (docs/metacontroller.md §3.5).
            Err(e) if !adopting && matches!(status_code(&e), Some(404 | 410)) => Ok(()),
            Err(source) if adopting => Err(ExecuteError::AdoptChild { kind, name, source }),
            Err(source) => Err(ExecuteError::ReleaseChild { kind, name, source }),
        }
    }
}
