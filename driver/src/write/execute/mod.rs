//! The executor: performs a plan's operations against the API server, in
//! order, and decides nothing. Which errors end a reconcile, and which are
//! swallowed, follows docs/metacontroller.md §5.
//!
//! Here the loop over the ops and the writes it makes itself; the executor
//! and what every write uses are in `executor.rs`, the guarded metadata
//! patches (finalizers, owner references) in `metadata.rs`, the
//! ControllerRevisions' writes in `revision.rs`, Events in `event.rs`, the
//! errors in `error.rs`. Each of those adds methods to [`Executor`]; none
//! calls back into this loop.

use crate::client::responses::remembering_answers;
use crate::decide::model::Driven;
use crate::decide::plan::{Op, Target, Written, WrittenMetadata};
use kube::ResourceExt;
use kube::api::{
    DeleteParams, DynamicObject, Patch, PatchParams, Preconditions, PropagationPolicy,
};
use serde_json::{Value, json};

mod error;
mod event;
mod executor;
mod metadata;
mod revision;

use error::status_code;
pub use error::{ExecuteError, ExecuteErrors, namespace_terminating};
pub use executor::Executor;
use executor::patch_from;

/// The field manager of every server-side apply.
pub const FIELD_MANAGER: &str = "metahook";

/// After a plan: the parent as it now is (a finalizer change returns it),
/// and the errors of operations that do not stop a plan.
#[derive(Debug)]
pub struct Executed {
    pub parent: DynamicObject,
    pub errors: Vec<ExecuteError>,
}

impl Executor {
    /// Performs `ops` in order. A finalizer change or a failed parent check
    /// ends the plan with an error; other failures are collected and the
    /// remaining operations still run (the status is written even when a
    /// child operation failed). An Event that tells of a write is published
    /// only if that write went through.
    pub async fn execute(
        &self,
        ctl: &Driven,
        parent: DynamicObject,
        ops: Vec<Op>,
    ) -> Result<Executed, ExecuteError> {
        // Each call counted by the code the API server answered.
        remembering_answers(self.execute_ops(ctl, parent, ops)).await
    }

    async fn execute_ops(
        &self,
        ctl: &Driven,
        mut parent: DynamicObject,
        ops: Vec<Op>,
    ) -> Result<Executed, ExecuteError> {
        let parent_name = parent.name_any();
        let parent_key = format!(
            "{} {}",
            ctl.parent.api.kind,
            crate::decide::model::namespaced_name(&parent)
        );
        let parent_uid = parent.uid().unwrap_or_default();
        let parent_kind = ctl.parent.api.kind.clone();
        // The version the plan read: what a later pass's cache shows until
        // it sees this plan's writes.
        let planned_on = parent.resource_version().unwrap_or_default();
        let mut errors = Vec::new();
        let mut written = std::collections::HashSet::new();
        for op in ops {
            match op {
                Op::AddFinalizer { before, after } => {
                    parent = self
                        .set_finalizers(ctl, &parent, before, after, true)
                        .await?;
                }
                Op::RemoveFinalizer { before, after } => {
                    parent = self
                        .set_finalizers(ctl, &parent, before, after, false)
                        .await?;
                }
                Op::VerifyParent => {
                    let api = self.parent_api(ctl, &parent);
                    let live = api.get_opt(&parent_name).await;
                    self.count(ctl, "get_parent", &parent_kind, &live);
                    match live {
                        Ok(Some(live))
                            if live.metadata.uid.as_deref() == Some(parent_uid.as_str())
                                && live.metadata.deletion_timestamp.is_none() => {}
                        Ok(_) => return Err(ExecuteError::ParentChanged { parent: parent_key }),
                        Err(source) => {
                            return Err(ExecuteError::VerifyParent {
                                parent: parent_key,
                                source,
                            });
                        }
                    }
                }
                Op::Adopt {
                    child,
                    before,
                    after,
                } => {
                    if let Err(e) = self.set_owners(ctl, &child, before, after, true).await {
                        errors.push(e);
                    }
                }
                Op::Release {
                    child,
                    before,
                    after,
                } => {
                    if let Err(e) = self.set_owners(ctl, &child, before, after, false).await {
                        errors.push(e);
                    }
                }
                Op::DeleteChild { child, .. } => match self.delete_child(ctl, &child).await {
                    Ok(()) => {
                        written.insert(Written::Child {
                            type_index: child.type_index,
                            name: child.name,
                        });
                    }
                    Err(e) => errors.push(e),
                },
                Op::ApplyChild {
                    type_index,
                    namespace,
                    name,
                    body,
                    fingerprint,
                } => {
                    let (api, kind) = self.child_api(ctl, type_index, namespace.as_deref())?;
                    let params = PatchParams::apply(FIELD_MANAGER).force();
                    let result = api.patch(&name, &params, &Patch::Apply(&body)).await;
                    self.count(ctl, "apply", &kind, &result);
                    match result {
                        Ok(applied) => {
                            self.memory.record(
                                type_index,
                                namespace.as_deref(),
                                &name,
                                fingerprint,
                                &applied,
                            );
                            written.insert(Written::Child { type_index, name });
                        }
                        // Conflict and NotFound are swallowed: the watch
                        // event that follows syncs again
                        // (docs/metacontroller.md §5).
                        Err(e) if matches!(status_code(&e), Some(404 | 409)) => {
                            tracing::debug!(%kind, %name, error = %e, "apply swallowed");
                        }
                        Err(source) => errors.push(ExecuteError::ApplyChild { kind, name, source }),
                    }
                }
                Op::Revision(write) => {
                    // Every revision is written before any child is
                    // touched: a failure ends the plan.
                    self.write_revision(ctl, &parent, write).await?;
                }
                Op::WriteStatus { status } => {
                    // `add` on an existing member replaces it: the whole
                    // status is replaced, as Metacontroller does; the `test`
                    // makes sure it is still the same object.
                    let patch = patch_from(json!([
                        {"op": "test", "path": "/metadata/uid", "value": parent_uid},
                        {"op": "add", "path": "/status", "value": status},
                    ]))?;
                    let api = self.parent_api(ctl, &parent);
                    let result = api
                        .patch_status(
                            &parent_name,
                            &PatchParams::default(),
                            &Patch::Json::<()>(patch),
                        )
                        .await;
                    self.count(ctl, "write_status", &parent_kind, &result);
                    match result {
                        Ok(updated) => {
                            self.memory.record_status(
                                &parent_uid,
                                parent
                                    .metadata
                                    .resource_version
                                    .as_deref()
                                    .unwrap_or_default(),
                                status,
                            );
                            written.insert(Written::Status);
                            parent = updated;
                        }
                        // Gone (404), replaced (the UID test fails: 422), or
                        // changed under us (409): the next event re-syncs.
                        Err(e) if matches!(status_code(&e), Some(404 | 409 | 422)) => {
                            tracing::debug!(parent = %parent_key, error = %e, "status write swallowed");
                        }
                        Err(source) => errors.push(ExecuteError::WriteStatus {
                            parent: parent_key.clone(),
                            source,
                        }),
                    }
                }
                Op::PatchObject { patch, .. } => {
                    let patch = patch_from(Value::Array(patch))?;
                    let api = self.parent_api(ctl, &parent);
                    let result = api
                        .patch(
                            &parent_name,
                            &PatchParams::default(),
                            &Patch::Json::<()>(patch),
                        )
                        .await;
                    self.count(ctl, "patch_object", &parent_kind, &result);
                    match result {
                        Ok(updated) => {
                            self.memory.record_metadata(
                                &parent_uid,
                                &planned_on,
                                WrittenMetadata {
                                    labels: updated.metadata.labels.clone(),
                                    annotations: updated.metadata.annotations.clone(),
                                },
                            );
                            // A type without a status subresource has its
                            // status written here.
                            written.insert(Written::Status);
                            parent = updated;
                        }
                        // Gone: nothing left to decorate.
                        Err(e) if status_code(&e) == Some(404) => {
                            tracing::debug!(parent = %parent_key, error = %e, "object gone");
                        }
                        // A failed `test` (422) or a conflict is a stale
                        // cache: an error, retried quietly
                        // (`ExecuteError::is_stale_cache`).
                        Err(source) => errors.push(ExecuteError::PatchObject {
                            parent: parent_key.clone(),
                            source,
                        }),
                    }
                }
                Op::Event {
                    kind,
                    reason,
                    note,
                    after,
                } => {
                    if after.is_none_or(|w| written.contains(&w)) {
                        self.publish(ctl, &parent, kind, reason, note).await;
                    } else {
                        tracing::debug!(parent = %parent_key, %reason, %note, "not published: its write did not go through");
                    }
                }
            }
        }
        Ok(Executed { parent, errors })
    }

    async fn delete_child(&self, ctl: &Driven, child: &Target) -> Result<(), ExecuteError> {
        let (api, kind) = self.child_api(ctl, child.type_index, child.namespace.as_deref())?;
        // Explicit Background propagation so that, e.g., a Job's pods go too;
        // the UID precondition makes sure a same-named successor survives.
        let params = DeleteParams {
            propagation_policy: Some(PropagationPolicy::Background),
            preconditions: Some(Preconditions {
                uid: Some(child.uid.clone()),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        let result = api.delete(&child.name, &params).await;
        self.count(ctl, "delete", &kind, &result);
        match result {
            Ok(_) => {
                self.memory
                    .forget(child.type_index, child.namespace.as_deref(), &child.name);
                Ok(())
            }
            Err(e) if status_code(&e) == Some(404) => Ok(()),
            Err(source) => Err(ExecuteError::DeleteChild {
                kind,
                name: child.name.clone(),
                source,
            }),
        }
    }
}

#[cfg(test)]
mod tests;
