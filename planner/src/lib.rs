//! The pure part of metahook's driver: what it decides, with no I/O — no
//! tokio, hyper, rustls or kube client in its tree (kube's types only).
//! The driver (metahook-driver) runs it against a cluster; the convergence
//! check (metahook-testing) and `metahook render --plan` run it in memory.
//!
//! | module | holds |
//! | --- | --- |
//! | [`config`] | the CompositeController and DecoratorController manifests, read and checked offline |
//! | [`decide`] | the planner ([`decide::plan`]), the controller as driven ([`decide::model`]), selectors, related objects, ControllerRevisions |
//! | [`wire`] | a hook's request and response, as Metacontroller's webhooks carry them |
//! | [`steps`] | one operation of a plan as a person reads it (records, previews) |
//! | [`preview`] | `metahook render --plan`: the planner on one recorded request |
#![forbid(unsafe_code)]

pub mod config;
pub mod decide;
pub mod preview;
pub mod steps;
pub mod wire;

#[cfg(any(test, feature = "test-support"))]
#[doc(hidden)]
pub mod test_support;

/// An error and its sources, one after another: "a: b: c".
pub fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    error_chain_with(err, |e| (e.to_string(), false))
}

/// [`error_chain`] with each error said by `describe`: its text, and
/// whether that text already holds its sources (then they are not
/// followed). A source whose text the chain already holds is said once
/// (some errors print their source themselves).
pub fn error_chain_with(
    err: &(dyn std::error::Error + 'static),
    describe: impl Fn(&(dyn std::error::Error + 'static)) -> (String, bool),
) -> String {
    let (mut text, mut whole) = describe(err);
    let mut source = err.source();
    while let Some(cause) = source.filter(|_| !whole) {
        let (message, holds_sources) = describe(cause);
        if !text.contains(&message) {
            text.push_str(": ");
            text.push_str(&message);
        }
        whole = holds_sources;
        source = cause.source();
    }
    text
}
