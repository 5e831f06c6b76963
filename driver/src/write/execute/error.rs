//! What can fail when a plan is executed, named after the operation, and
//! which failures are only a stale cache, a namespace being deleted or an
//! owner kind the API server has yet to learn (quiet retries,
//! docs/metacontroller.md §5).

/// What failed, named after the operation.
#[derive(Debug, thiserror::Error)]
pub enum ExecuteError {
    #[error("adding the finalizer to {parent} failed")]
    AddFinalizer {
        parent: String,
        #[source]
        source: kube::Error,
    },
    #[error("removing the finalizer from {parent} failed")]
    RemoveFinalizer {
        parent: String,
        #[source]
        source: kube::Error,
    },
    #[error("reading {parent} from the API server before adopting failed")]
    VerifyParent {
        parent: String,
        #[source]
        source: kube::Error,
    },
    #[error("{parent} is gone, was replaced or is being deleted: not adopting")]
    ParentChanged { parent: String },
    #[error("adopting {kind} {name} failed")]
    AdoptChild {
        kind: String,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("releasing {kind} {name} failed")]
    ReleaseChild {
        kind: String,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("applying {kind} {name} failed")]
    ApplyChild {
        kind: String,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("deleting {kind} {name} failed")]
    DeleteChild {
        kind: String,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("writing the status of {parent} failed")]
    WriteStatus {
        parent: String,
        #[source]
        source: kube::Error,
    },
    #[error("writing the labels, annotations or status of {parent} failed")]
    PatchObject {
        parent: String,
        #[source]
        source: kube::Error,
    },
    #[error("{verb} ControllerRevision {name} failed")]
    WriteRevision {
        verb: &'static str,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("the plan names child type {0}, which the controller does not have")]
    UnknownChildType(usize),
    #[error("building a JSON patch failed")]
    BuildPatch(#[source] serde_json::Error),
}

impl ExecuteError {
    /// Whether a guarded patch failed because the cached object it was
    /// based on is out of date (its `test` failed: 422, or a conflict:
    /// 409). The watch event that made it stale syncs the parent again, so
    /// this is a quiet retry, not a warning.
    pub fn is_stale_cache(&self) -> bool {
        match self {
            ExecuteError::AddFinalizer { source, .. }
            | ExecuteError::RemoveFinalizer { source, .. }
            | ExecuteError::AdoptChild { source, .. }
            | ExecuteError::ReleaseChild { source, .. }
            | ExecuteError::PatchObject { source, .. }
            | ExecuteError::WriteRevision { source, .. } => {
                matches!(status_code(source), Some(409 | 422))
            }
            _ => false,
        }
    }

    /// Whether the API server refused because the namespace is being
    /// deleted: the parent goes with it, so retrying quietly is all there
    /// is to do (a Warning could not even be recorded there).
    pub fn is_namespace_terminating(&self) -> bool {
        match self {
            ExecuteError::ApplyChild { source, .. }
            | ExecuteError::AdoptChild { source, .. }
            | ExecuteError::AddFinalizer { source, .. }
            | ExecuteError::WriteRevision { source, .. } => namespace_terminating(source),
            _ => false,
        }
    }

    /// Whether the API server refused an owner reference to the parent
    /// because it does not know the parent's kind yet
    /// (`owner_kind_unknown`): it will within 30 s of the CRD's
    /// install, so this is retried soon and quietly.
    pub fn is_owner_kind_unknown(&self) -> bool {
        match self {
            ExecuteError::ApplyChild { source, .. }
            | ExecuteError::AdoptChild { source, .. }
            | ExecuteError::WriteRevision { source, .. } => owner_kind_unknown(source),
            _ => false,
        }
    }
}

/// A 403 from the API server's garbage-collector admission, which cannot
/// yet map the owner's kind: it relearns the cluster's types only every
/// 30 s (k8s.io/apiserver's admission options), so for up to that long
/// after a CRD is installed it refuses an ownerReference to one of its
/// objects that blocks the owner's deletion, as a child's controller
/// reference does. The refusal carries no cause, only this message.
pub fn owner_kind_unknown(err: &kube::Error) -> bool {
    match err {
        kube::Error::Api(status) => {
            status.code == 403
                && status.message.contains(
                    "cannot set blockOwnerDeletion in this case because cannot find RESTMapping",
                )
        }
        _ => false,
    }
}

/// A 403 whose cause is `NamespaceTerminating`: nothing new may be created
/// in a namespace being deleted.
pub fn namespace_terminating(err: &kube::Error) -> bool {
    match err {
        kube::Error::Api(status) => {
            status.code == 403
                && status
                    .details
                    .as_ref()
                    .is_some_and(|d| d.causes.iter().any(|c| c.reason == "NamespaceTerminating"))
        }
        _ => false,
    }
}

/// Child operations that failed; the others went ahead.
#[derive(Debug, thiserror::Error)]
#[error("{} operation(s) failed: {}", .0.len(), .0.iter().map(|e| crate::api_error_chain(e)).collect::<Vec<_>>().join("; "))]
pub struct ExecuteErrors(pub Vec<ExecuteError>);

pub(super) fn status_code(err: &kube::Error) -> Option<u16> {
    match err {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}
