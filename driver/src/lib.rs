//! The bundled driver: a small Metacontroller for CompositeControllers,
//! built on kube-rs.
//!
//! It watches each controller's parents and children, calls the
//! controller's hooks (in this process, or over HTTP as Metacontroller
//! would) and applies what they decide, with Metacontroller's semantics for
//! the subset docs/metacontroller.md §2–§5 describes. Deciding is pure (the
//! planner); everything else moves bytes.
//!
//! ```text
//! caches ─change─▶ triggers ─key─▶ queue ─▶ applier (worker) ─▶ reconcile
//!                                                      plan ◀─┤├─▶ hook_call
//!                                                   execute ◀─┘
//! ```
//!
//! **Starting**: [`prepare`] reads the manifests ([`config`]) and resolves
//! the hooks before anything connects; [`connect`] builds the clients
//! (within the [`throttle`] budget, which tells the reconciles when it is
//! short through [`pressure`]; answers counted by [`responses`]);
//! [`run`] resolves the types ([`discovery`]), takes the Lease ([`leader`])
//! and starts one [`worker`] per controller.
//!
//! **One controller**: its [`context`] (what its reconciles share); the
//! [`cache`]s of its types; [`triggers`] (pure: which parents a change
//! queues) into its [`queue`]; [`worker`] runs kube's applier over them.
//!
//! **One reconcile**, in order: [`reconcile`]. The decisions: [`plan`]
//! (pure) with [`model`] (the controller as driven), [`selector`] and
//! [`related`] (customize rules, pure; their answers kept by
//! [`customized`]); hook requests and responses as Metacontroller builds
//! them: [`wire`], called by [`hook_call`] (with [`hook_auth`] for a
//! webhook's TLS and credentials); the API calls: [`execute`], which
//! remembers what it applied ([`memory`]) and publishes [`events`];
//! afterwards [`backoff`] and the parent's [`records`].
//!
//! **Being seen**: [`metrics`], [`otel`] (trace IDs and `traceparent`), [`records`] through [`view`]
//! (`/debug/driver` and the aggregated API), [`preview`] (`metahook render
//! --plan`).

#![forbid(unsafe_code)]

pub mod backoff;
pub mod cache;
pub mod config;
pub mod connect;
pub mod context;
pub mod customized;
pub mod discovery;
pub mod events;
pub mod execute;
pub mod hook_auth;
pub mod hook_call;
pub mod ignored_status;
pub mod leader;
pub mod memory;
pub mod metrics;
pub mod model;
pub mod otel;
pub mod plan;
pub mod prepare;
pub mod pressure;
pub mod preview;
pub mod queue;
pub mod reconcile;
pub mod records;
pub mod related;
pub mod responses;
pub mod revisions;
pub mod run;
pub mod selector;
pub mod throttle;
pub mod triggers;
pub mod view;
pub mod wire;
pub mod worker;

#[cfg(test)]
pub(crate) mod scripted_api;
#[cfg(test)]
pub(crate) mod test_support;

/// An error and its sources, one after another: "a: b: c".
pub fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = describe(err);
    let mut source = if is_api_error(err) {
        None
    } else {
        err.source()
    };
    while let Some(cause) = source {
        // Some errors (kube's among them) already print their source; say
        // each thing once.
        let message = describe(cause);
        if !text.contains(&message) {
            text.push_str(": ");
            text.push_str(&message);
        }
        source = if is_api_error(cause) {
            None
        } else {
            cause.source()
        };
    }
    text
}

/// One error, without its sources. An API server's refusal is said as the
/// server said it ("403 Forbidden: ..."): kube's own text appends the whole
/// `Status` in debug form, which buries the message in logs and fills an
/// Event's 1 kB note.
fn describe(err: &(dyn std::error::Error + 'static)) -> String {
    match err.downcast_ref::<kube::Error>() {
        Some(kube::Error::Api(status)) => {
            format!("{} {}: {}", status.code, status.reason, status.message)
        }
        _ => err.to_string(),
    }
}

fn is_api_error(err: &(dyn std::error::Error + 'static)) -> bool {
    matches!(err.downcast_ref::<kube::Error>(), Some(kube::Error::Api(_)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("applying Deployment web failed")]
    struct Apply(#[source] kube::Error);

    #[test]
    fn api_errors_read_as_the_server_said_them() {
        let status = kube::core::Status::failure(
            "deployments.apps \"web\" is forbidden: namespace shop is being terminated",
            "Forbidden",
        )
        .with_code(403);
        let err = Apply(kube::Error::Api(Box::new(status)));
        assert_eq!(
            error_chain(&err),
            "applying Deployment web failed: 403 Forbidden: deployments.apps \"web\" is forbidden: namespace shop is being terminated"
        );
    }
}
