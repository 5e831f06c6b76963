//! One parent planned as one reconcile of the driver would plan it
//! (`reconcile/mod.rs`), with nothing executed: the prelude planned on the
//! children the parent may claim, its finalizer change made on the parent
//! in memory (the hook sees the parent as the driver's write would leave
//! it), the related objects read, the request built and the hook called
//! as the driver calls them, and the answer planned. Nothing is
//! remembered of an earlier apply ([`NoMemory`]): the driver after a
//! restart, which leaves a child alone when it carries the fingerprint of
//! the same apply and every field of it. The status is planned to be
//! written now ([`StatusPace::Now`]): where the driver would let it wait
//! a moment, the plan shows where it goes. A DecoratorController's hook
//! and answer are `decorate.rs`'s.

use super::context::{Reader, Resolved};
use super::error::PassError;
use super::parent_plan::{ParentPlan, step};
use super::related;
use super::window::Window;
use crate::controller::cache::CachedObject;
use crate::decide::model::ResolvedType;
use crate::decide::plan::{self, Next, NoMemory, Op, StatusPace};
use crate::hook::wire;
use crate::observe::records::Step;
use crate::reconcile::decorate::Observed;
use crate::reconcile::hook::object_maps;
use crate::reconcile::rolling::rollout;
use kube::api::DynamicObject;
use metahook_core::HookKind;
use std::sync::Arc;

/// `cached`'s plan (a failure is the plan's `failure`, with the steps
/// planned before it).
pub(super) async fn plan(
    reader: &Reader,
    resolved: &Resolved,
    window: &Window,
    cached: &CachedObject,
) -> ParentPlan {
    let mut out = ParentPlan::of(&resolved.driven, cached);
    if let Err(err) = steps(reader, resolved, window, cached, &mut out).await {
        out.failure = Some(crate::api_error_chain(&err));
    }
    out
}

async fn steps(
    reader: &Reader,
    resolved: &Resolved,
    window: &Window,
    cached: &CachedObject,
    out: &mut ParentPlan,
) -> Result<(), PassError> {
    let ctl = &resolved.driven;
    let parent = cached.decode().map_err(PassError::Cached)?;
    let uid = parent.metadata.uid.as_deref().unwrap_or_default();
    let candidates = window.candidates(uid).map_err(PassError::Cached)?;
    let prelude = plan::prelude(ctl, &parent, &candidates)?;
    out.steps
        .extend(prelude.ops.iter().map(|op| Step::of(op, ctl, &[])));
    let parent = as_written(parent, &prelude.ops);
    let Next::CallHook { hook, observed } = prelude.next else {
        return Ok(());
    };
    out.hook = Some(hook.as_str());
    let namespace = if ctl.parent.namespaced {
        cached.metadata.namespace.as_deref()
    } else {
        None
    };
    let related = related::objects(reader, resolved, &parent).await?;
    if ctl.is_decorator() {
        let seen = Observed {
            parent,
            hook,
            attachments: &observed,
            related: &related,
            namespace,
        };
        return super::decorate::steps(reader, resolved, window, seen, out).await;
    }
    let seen = Seen {
        hook,
        observed: &observed,
        related: &related,
        namespace,
    };
    // Once per revision when a child type rolls, as the driver calls it
    // (`reconcile/rolling.rs`): the ControllerRevisions' writes first.
    let response = if plan::rolls(ctl, &parent) {
        let uid = parent.metadata.uid.as_deref().unwrap_or_default();
        let candidates = window.revisions(uid).map_err(PassError::Cached)?;
        let seen = &seen;
        let rolled = rollout(
            ctl,
            &parent,
            &candidates,
            &observed,
            |i, parent| async move {
                let own;
                let related = if i == 0 {
                    seen.related
                } else {
                    own = related::objects(reader, resolved, &parent).await?;
                    &own[..]
                };
                Ok::<_, PassError>((call(reader, resolved, &parent, seen, related).await?, ()))
            },
        )
        .await?;
        out.steps
            .extend(rolled.ops.iter().map(|op| step(op, ctl, &parent, &[])));
        rolled.response
    } else {
        call(reader, resolved, &parent, &seen, seen.related).await?
    };
    let planned = plan::after_hook(
        ctl,
        &parent,
        &observed,
        window,
        response,
        &NoMemory,
        StatusPace::Now,
    )?;
    out.steps.extend(
        planned
            .ops
            .iter()
            .map(|op| step(op, ctl, &parent, &observed)),
    );
    match planned.failure {
        Some(failure) => Err(PassError::Plan(failure)),
        None => Ok(()),
    }
}

/// What a composite's hook is called with, beside the parent.
struct Seen<'a> {
    hook: HookKind,
    observed: &'a [Vec<Arc<DynamicObject>>],
    related: &'a [(ResolvedType, Vec<Arc<DynamicObject>>)],
    namespace: Option<&'a str>,
}

/// The sync (or finalize) hook called with `parent`, as the driver's
/// `call_hook` calls it (`reconcile/hook.rs`): the same request, the same
/// decoding.
async fn call(
    reader: &Reader,
    resolved: &Resolved,
    parent: &DynamicObject,
    seen: &Seen<'_>,
    related: &[(ResolvedType, Vec<Arc<DynamicObject>>)],
) -> Result<wire::HookResponse, PassError> {
    let ctl = &resolved.driven;
    let hook = seen.hook;
    let target = resolved.hooks.for_pass(hook);
    let (children, related) = object_maps(ctl, seen.observed, related, target, seen.namespace);
    let request = wire::sync_request(
        &ctl.config.object,
        parent,
        &children,
        &related,
        hook == HookKind::Finalize,
    )
    .map_err(PassError::Request)?;
    let answer = reader
        .caller
        .call(&ctl.config.name, target, request)
        .await?;
    wire::decode_sync_response(&answer, target.strict)
        .map_err(|source| PassError::Answer { hook, source })
}

/// `parent` as the prelude's finalizer writes would leave it: what the
/// hook is called with after the executor's patch.
fn as_written(mut parent: DynamicObject, ops: &[Op]) -> DynamicObject {
    for op in ops {
        if let Op::AddFinalizer { after, .. } | Op::RemoveFinalizer { after, .. } = op {
            parent.metadata.finalizers = (!after.is_empty()).then(|| after.clone());
        }
    }
    parent
}

#[cfg(test)]
mod tests {
    use super::*;

    mod rolling;

    #[test]
    fn the_hook_sees_the_finalizer_the_prelude_adds_or_removes() {
        let parent: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "example.com/v1", "kind": "Greeter",
            "metadata": {"name": "hi", "namespace": "shop", "finalizers": ["keep"]},
        }))
        .unwrap();
        let added = as_written(
            parent.clone(),
            &[Op::AddFinalizer {
                before: Some(vec!["keep".to_owned()]),
                after: vec!["keep".to_owned(), "ours".to_owned()],
            }],
        );
        assert_eq!(
            added.metadata.finalizers,
            Some(vec!["keep".to_owned(), "ours".to_owned()])
        );
        let removed = as_written(
            parent,
            &[Op::RemoveFinalizer {
                before: Some(vec!["keep".to_owned()]),
                after: Vec::new(),
            }],
        );
        assert_eq!(removed.metadata.finalizers, None);
    }
}
