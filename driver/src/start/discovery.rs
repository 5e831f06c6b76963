//! Resolving `apiVersion` + plural resource names to types through the API
//! server's discovery (docs/metacontroller.md §2, what Metacontroller checks
//! before a controller starts).

use crate::decide::model::ResolvedType;
use kube::Client;
use kube::core::GroupVersion;
use kube::discovery::{self, Scope};

#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    #[error("{0:?} is not a valid apiVersion")]
    ApiVersion(String),
    #[error("discovering {api_version} failed (is the CRD installed?)")]
    Group {
        api_version: String,
        #[source]
        source: kube::Error,
    },
    #[error("{api_version} has no resource {resource:?} (is the CRD installed?)")]
    NoResource {
        api_version: String,
        resource: String,
    },
    #[error(
        "{api_version} {resource} has no status subresource: a CompositeController parent needs one"
    )]
    NoStatus {
        api_version: String,
        resource: String,
    },
}

impl DiscoveryError {
    /// The type may yet be served (its CRD installed, its API server back).
    pub fn may_appear(&self) -> bool {
        matches!(
            self,
            DiscoveryError::Group { .. } | DiscoveryError::NoResource { .. }
        )
    }
}

/// The type named by `api_version` and plural `resource`, with whether it
/// has a status subresource.
pub async fn resolve(
    client: &Client,
    api_version: &str,
    resource: &str,
) -> Result<(ResolvedType, bool), DiscoveryError> {
    let gv: GroupVersion = api_version
        .parse()
        .map_err(|_| DiscoveryError::ApiVersion(api_version.to_owned()))?;
    let group = discovery::pinned_group(client, &gv)
        .await
        .map_err(|source| DiscoveryError::Group {
            api_version: api_version.to_owned(),
            source,
        })?;
    let (api, caps) = group
        .versioned_resources(&gv.version)
        .into_iter()
        .find(|(ar, _)| ar.plural == resource)
        .ok_or_else(|| DiscoveryError::NoResource {
            api_version: api_version.to_owned(),
            resource: resource.to_owned(),
        })?;
    let has_status = caps
        .subresources
        .iter()
        .any(|(sub, _)| sub.plural == "status" || sub.plural.ends_with("/status"));
    Ok((
        ResolvedType {
            api,
            namespaced: caps.scope == Scope::Namespaced,
        },
        has_status,
    ))
}
