//! The bundled driver: a small Metacontroller for CompositeControllers,
//! built on kube-rs.
//!
//! It watches each controller's parents and children, calls the
//! controller's hooks (in this process, or over HTTP as Metacontroller
//! would) and applies what they decide, with Metacontroller's semantics for
//! the subset docs/metacontroller.md §2–§5 describes. Deciding is pure,
//! in its own crate (metahook-planner: [`config`], [`decide`],
//! [`hook::wire`], [`observe::preview`], re-exported here where the
//! driver's code names them); everything here moves bytes.
//!
//! # The map
//!
//! One folder a concern; a file's path says what it does.
//!
//! | folder | holds |
//! | --- | --- |
//! | [`config`] | (metahook-planner) the CompositeController and DecoratorController manifests, read and checked offline |
//! | [`start`] | before and at start: hooks resolved ([`start::prepare`]), types resolved ([`start::discovery`]), the Lease ([`start::leader`]), the workers started and stopped ([`start::run`]) |
//! | [`client`] | the kube `Client`: [`client::connect`], the request budget ([`client::throttle`], [`client::pressure`]), answers counted ([`client::responses`]) |
//! | [`controller`] | one controller at run time: [`controller::context`], [`controller::cache`], [`controller::triggers`], [`controller::queue`], [`controller::worker`], [`controller::backoff`] |
//! | [`reconcile`] | one reconcile of one parent, in order |
//! | [`decide`] | (metahook-planner) pure decisions: the planner ([`decide::plan`]), the controller as driven ([`decide::model`]), selectors, related objects, ControllerRevisions |
//! | [`hook`] | hook requests and responses ([`hook::wire`]), the call ([`hook::call`]), a webhook's TLS and credentials ([`hook::auth`]) |
//! | [`write`](mod@write) | a plan's API calls ([`write::execute`]), what they last wrote ([`write::memory`]), Events ([`write::events`]) |
//! | [`observe`] | [`observe::metrics`], [`observe::otel`], the parents' [`observe::records`] through [`observe::view`], and [`observe::preview`] (`metahook render --plan`) |
//!
//! # From a watch event to a write
//!
//! ```text
//! controller/cache ─change─▶ controller/triggers ─key─▶ controller/queue
//!   ─▶ controller/worker (kube's applier) ─▶ reconcile
//!        reconcile ─▶ decide/plan (prelude) ─▶ write/execute
//!                  ─▶ hook/call (hook/wire) ─▶ decide/plan (after_hook) ─▶ write/execute ─▶ API server
//!                  ─▶ observe/records, controller/backoff
//! ```
//!
//! 1. A cache ([`controller::cache`]) sees an object change and hands it
//!    to its subscribers; [`controller::triggers`] (pure) says which
//!    parents that change queues, into the controller's
//!    [`controller::queue`].
//! 2. [`controller::worker`] runs kube's applier over the queue and calls
//!    [`reconcile::reconcile`] with the parent and the controller's
//!    [`controller::context::Context`].
//! 3. The reconcile plans the prelude ([`decide::plan::prelude`]: the
//!    finalizer, adopting and releasing children) and executes it
//!    ([`write::execute`]); gathers related objects
//!    ([`decide::related`]); calls the hook ([`hook::call`], the request
//!    and answer in [`hook::wire`]); plans the rest
//!    ([`decide::plan::after_hook`]: applies, deletes, status) and
//!    executes it.
//! 4. What it did becomes the parent's record ([`observe::records`]) and
//!    metrics; a failure is retried when [`reconcile::error_policy`] says,
//!    after the parent's [`controller::backoff`].

#![forbid(unsafe_code)]

pub mod client;
pub mod controller;
pub mod hook;
pub mod observe;
pub mod reconcile;
pub mod start;
pub mod write;

pub use metahook_planner::{config, decide};

#[cfg(test)]
pub(crate) mod test_support;

/// [`metahook_core::error_chain`], with an API server's refusal said as
/// the server said it ("403 Forbidden: ..."):
/// kube's own text appends the whole `Status` in debug form, which buries
/// the message in logs and fills an Event's 1 kB note.
pub fn api_error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    metahook_core::error_chain_with(err, |e| match e.downcast_ref::<kube::Error>() {
        Some(kube::Error::Api(status)) => (
            format!("{} {}: {}", status.code, status.reason, status.message),
            true,
        ),
        _ => (e.to_string(), false),
    })
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
            api_error_chain(&err),
            "applying Deployment web failed: 403 Forbidden: deployments.apps \"web\" is forbidden: namespace shop is being terminated"
        );
    }
}
