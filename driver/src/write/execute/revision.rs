//! The executor's writes of a parent's ControllerRevisions (rolling
//! updates): created, updated as a compare-and-swap on the resource
//! version, adopted or released, deleted with a UID precondition. A
//! failure ends the plan.

use super::ExecuteError;
use super::error::status_code;
use super::executor::Executor;
use super::metadata::owners_patch;
use crate::decide::model::Driven;
use crate::decide::plan::RevisionWrite;
use crate::decide::revisions::revision_type;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, Preconditions};
use serde_json::{Value, json};

impl Executor {
    /// Creates, updates, deletes, adopts or releases one of the parent's
    /// ControllerRevisions.
    pub(super) async fn write_revision(
        &self,
        ctl: &Driven,
        parent: &DynamicObject,
        write: RevisionWrite,
    ) -> Result<(), ExecuteError> {
        let namespace = parent.namespace().unwrap_or_default();
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.client.clone(), &namespace, &revision_type().api);
        let kind = "ControllerRevision";
        let (verb, name, result) = match write {
            RevisionWrite::Create { body } => {
                let name = body
                    .pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let object: DynamicObject =
                    serde_json::from_value(body).map_err(ExecuteError::BuildPatch)?;
                let result = api.create(&Default::default(), &object).await.map(drop);
                self.count(ctl, "create_revision", kind, &result);
                ("creating", name, result)
            }
            RevisionWrite::Update {
                name,
                resource_version,
                children,
            } => {
                // The resource version makes the merge patch a
                // compare-and-swap: a stale cache fails (409).
                let patch = json!({
                    "metadata": {"resourceVersion": resource_version},
                    "children": children,
                });
                let result = api
                    .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .map(drop);
                self.count(ctl, "update_revision", kind, &result);
                ("updating", name, result)
            }
            RevisionWrite::SetOwners {
                name,
                uid,
                before,
                after,
                adopt,
            } => {
                let patch = owners_patch(&uid, before, after)?;
                let result = api
                    .patch(&name, &PatchParams::default(), &Patch::Json::<()>(patch))
                    .await
                    .map(drop);
                let (verb, operation) = if adopt {
                    ("adopting", "adopt_revision")
                } else {
                    ("releasing", "release_revision")
                };
                let result = match result {
                    // Releasing one already gone is done (as for children).
                    Err(e) if !adopt && matches!(status_code(&e), Some(404 | 410)) => Ok(()),
                    other => other,
                };
                self.count(ctl, operation, kind, &result);
                (verb, name, result)
            }
            RevisionWrite::Delete { name, uid } => {
                let params = DeleteParams {
                    preconditions: Some(Preconditions {
                        uid: Some(uid),
                        resource_version: None,
                    }),
                    ..DeleteParams::default()
                };
                let result = match api.delete(&name, &params).await {
                    Err(e) if status_code(&e) == Some(404) => Ok(()),
                    other => other.map(drop),
                };
                self.count(ctl, "delete_revision", kind, &result);
                ("deleting", name, result)
            }
        };
        result.map_err(|source| ExecuteError::WriteRevision { verb, name, source })
    }
}
