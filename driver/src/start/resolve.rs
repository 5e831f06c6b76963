//! A controller's types resolved through discovery before it is driven:
//! its parent (a composite's with a status subresource), its children, and
//! Metacontroller's ControllerRevisions when a child type rolls. A type not
//! served yet (a CRD installed after the driver) is waited for.

use crate::config::UpdateStrategyExt;
use crate::controller::context::HookTargets;
use crate::decide::model::{Driven, DrivenChild};
use crate::start::discovery::{self, DiscoveryError};
use crate::start::error::DriveError;
use crate::start::prepare::Prepared;
use kube::Client;
use std::time::Duration;

/// [`resolve_controller`], waiting for types the API server does not serve
/// yet (a CRD installed after the driver), as Metacontroller waits for
/// them: retried after 1 s, doubling up to 30 s; the driver is not ready
/// meanwhile. A parent with no status subresource stays an error.
pub(crate) async fn resolve_waiting(
    client: &Client,
    prepared: Prepared,
) -> Result<(Driven, HookTargets), DriveError> {
    let mut wait = Duration::from_secs(1);
    loop {
        match resolve_controller(client, prepared.clone()).await {
            Err(DriveError::Discovery {
                controller,
                what,
                source,
            }) if source.may_appear() => {
                tracing::warn!(%controller, field = what, error = %crate::api_error_chain(&*source), retry_in = ?wait, "a type the controller needs is not served yet");
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(Duration::from_secs(30));
            }
            resolved => return resolved,
        }
    }
}

/// The types of `prepared`'s controller, read once through `client`'s
/// discovery: what `plan --live` drives in thought, with no waiting for a
/// type that is not served.
pub async fn resolve_controller(
    client: &Client,
    prepared: Prepared,
) -> Result<(Driven, HookTargets), DriveError> {
    let config = prepared.config;
    let err = |what: &'static str| {
        let controller = config.name.clone();
        move |source| DriveError::Discovery {
            controller,
            what,
            source: Box::new(source),
        }
    };
    let (parent_field, children_field) = if config.is_decorator() {
        ("spec.resources", "spec.attachments")
    } else {
        ("spec.parentResource", "spec.childResources")
    };
    let (parent, has_status) =
        discovery::resolve(client, &config.parent.api_version, &config.parent.resource)
            .await
            .map_err(err(parent_field))?;
    // A decorator decorates any type (Pods, ClusterRoles); a composite's
    // parent must take a status of its own.
    if !has_status && !config.is_decorator() {
        return Err(err(parent_field)(DiscoveryError::NoStatus {
            api_version: config.parent.api_version.clone(),
            resource: config.parent.resource.clone(),
        }));
    }
    let mut children = Vec::new();
    for child in &config.children {
        let (resource, _) = discovery::resolve(client, &child.api_version, &child.resource)
            .await
            .map_err(err(children_field))?;
        children.push(DrivenChild {
            resource,
            strategy: child.update_strategy,
        });
    }
    if children.iter().any(|c| c.strategy.is_rolling()) {
        // Revisions live in the parent's namespace.
        if !parent.namespaced {
            return Err(DriveError::RollingClusterParent {
                controller: config.name.clone(),
            });
        }
        // Metacontroller's ControllerRevision CRD (driver/crds/, or
        // Metacontroller's own).
        let revisions = crate::decide::revisions::revision_type();
        discovery::resolve(client, &revisions.api.api_version, &revisions.api.plural)
            .await
            .map_err(err("ControllerRevisions (rolling updates)"))?;
    }
    Ok((
        Driven {
            config,
            parent,
            children,
            shard_labels: Vec::new(),
            status_subresource: has_status,
        },
        prepared.hooks,
    ))
}
