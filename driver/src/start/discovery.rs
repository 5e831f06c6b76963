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
    /// The API server answered that it does not serve the type: no such
    /// group version (404), or no such resource in it. Not a refusal, not
    /// a failure to reach it.
    pub fn not_served(&self) -> bool {
        match self {
            DiscoveryError::NoResource { .. } => true,
            DiscoveryError::Group {
                source: kube::Error::Api(status),
                ..
            // By code: a group the server lacks is answered with a plain
            // "404 page not found", no Status (`is_not_found` wants one).
            } => status.code == 404,
            DiscoveryError::Group { .. }
            | DiscoveryError::ApiVersion(_)
            | DiscoveryError::NoStatus { .. } => false,
        }
    }

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

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::Status;

    fn group(code: u16) -> DiscoveryError {
        DiscoveryError::Group {
            api_version: "samplecontroller.k8s.io/v1alpha1".to_owned(),
            source: kube::Error::Api(
                // As kube reports a 404 that carries no Status.
                Status::failure("404 page not found", "Failed to parse error data")
                    .with_code(code)
                    .boxed(),
            ),
        }
    }

    #[test]
    fn only_an_answer_that_the_type_is_not_there_says_it_is_not_served() {
        assert!(group(404).not_served());
        assert!(
            DiscoveryError::NoResource {
                api_version: "v1".to_owned(),
                resource: "foos".to_owned(),
            }
            .not_served()
        );
        // Refused, or the server failing: it may well serve the type.
        assert!(!group(403).not_served());
        assert!(!group(503).not_served());
        assert!(!DiscoveryError::ApiVersion("a/b/c".to_owned()).not_served());
    }
}
