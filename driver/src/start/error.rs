//! What stops the driver: a bad manifest or hook, no connection, a type
//! that cannot be driven, the Lease lost.

use crate::start::discovery::DiscoveryError;
use crate::start::leader::LeaderError;
use crate::start::prepare::PrepareError;

#[derive(Debug, thiserror::Error)]
pub enum DriveError {
    #[error(transparent)]
    Prepare(#[from] PrepareError),
    #[error("connecting to the Kubernetes API server failed")]
    Connect(#[source] Box<kube::Error>),
    #[error("controller {controller}: resolving {what} failed")]
    Discovery {
        controller: String,
        what: &'static str,
        #[source]
        source: Box<DiscoveryError>,
    },
    #[error(
        "controller {controller}: rolling updates need a namespaced parent (its ControllerRevisions live in its namespace)"
    )]
    RollingClusterParent { controller: String },
    #[error(transparent)]
    Leader(#[from] LeaderError),
    #[error("the lease was lost; stopping so that only one replica drives")]
    LeaseLost,
    #[error("the HTTP hook client could not be built")]
    HttpClient(#[source] std::io::Error),
}
