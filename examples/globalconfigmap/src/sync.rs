//! The sync hook: a copy of the source ConfigMap, same name, same data, in
//! every Namespace but the source's own. Without a source (not created
//! yet, or deleted) it desires no copy, so the copies go with it.

use crate::resource::{GlobalConfigMap, GlobalConfigMapSpec, GlobalConfigMapStatus};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use metahook::Answer;
use metahook::SpecError;
use std::fmt;

/// A sync of a GlobalConfigMap: its children are the copies, its related
/// objects the source and the Namespaces ([`crate::customize`]).
pub type Request = metahook::Request<GlobalConfigMap, ConfigMap, (ConfigMap, Namespace)>;

/// What the status says once every copy is desired.
pub const FINE: &str = "fine";

/// Why a sync cannot answer: nothing is written, the engine retries and
/// reports the message in a Warning Event.
#[derive(Debug)]
pub enum SyncError {
    /// The spec does not fit the type (the CRD should have refused it).
    Spec(SpecError),
}

impl fmt::Display for SyncError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SyncError::Spec(e) => write!(f, "the spec cannot be read: {e}"),
        }
    }
}

impl std::error::Error for SyncError {}

pub fn sync(req: &Request) -> Result<Answer<GlobalConfigMapStatus>, SyncError> {
    let spec = req
        .parent
        .spec
        .as_ref()
        .map_err(|e| SyncError::Spec(e.clone()))?;
    let Some(source) = req
        .related
        .of::<ConfigMap>()
        .get_in(&spec.source_namespace, &spec.source_name)
    else {
        let working = format!(
            "no ConfigMap {}/{} to copy",
            spec.source_namespace, spec.source_name
        );
        return Ok(Answer::new(GlobalConfigMapStatus { working }));
    };
    let copies = req
        .related
        .of::<Namespace>()
        .iter()
        .filter_map(|ns| ns.metadata.name.as_deref())
        .filter(|ns| *ns != spec.source_namespace)
        .filter(|ns| !terminating(req, ns))
        .map(|ns| copy(spec, source, ns));
    Ok(Answer::new(GlobalConfigMapStatus {
        working: FINE.to_owned(),
    })
    .children(copies))
}

/// A Namespace being deleted takes no new object: a copy desired there
/// would fail to be created at every sync until it is gone.
fn terminating(req: &Request, name: &str) -> bool {
    req.related.of::<Namespace>().get(name).is_some_and(|ns| {
        ns.metadata.deletion_timestamp.is_some()
            || ns.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Terminating")
    })
}

/// The copy in `namespace`: the source's data and binary data, nothing of
/// its metadata but the name.
fn copy(spec: &GlobalConfigMapSpec, source: &ConfigMap, namespace: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(spec.source_name.clone()),
            namespace: Some(namespace.to_owned()),
            ..ObjectMeta::default()
        },
        data: source.data.clone(),
        binary_data: source.binary_data.clone(),
        immutable: None,
    }
}
