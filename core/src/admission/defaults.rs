//! A defaults hook (a mutating webhook): the parent's spec in, changed in
//! place; the API server is sent the JSON patch from the object it gave to
//! the one with the hook's changes.

use super::review::{Reply, WireReview};
use super::verdict::Verdict;
use crate::decode::decode;
use crate::hook::Handler;
use crate::request::{Parent, ParentMeta, ParentType};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::sync::Arc;

/// `hook` as the handler of a controller's `default` path. A delete, or an
/// object whose spec does not fit the type, is allowed unchanged: there is
/// no spec to default (the validate hook or the schema says what is wrong).
pub(crate) fn defaults_handler<P, F>(hook: F) -> Handler
where
    P: ParentType,
    P::SpecType: Serialize,
    F: Fn(&ParentMeta, &mut P::SpecType) + Send + Sync + 'static,
{
    Arc::new(move |body, _now| {
        let review: WireReview = decode(body)?;
        let patch = match review.request.object.as_deref() {
            Some(raw) => {
                let parent: Parent<P> = decode(raw.get().as_bytes())?;
                match parent.spec {
                    Ok(mut spec) => {
                        let before = serde_json::to_value(&spec)?;
                        hook(&parent.metadata, &mut spec);
                        let after = serde_json::to_value(&spec)?;
                        let given: GivenSpec = decode(raw.get().as_bytes())?;
                        spec_patch(given.spec, &before, &after)?
                    }
                    Err(_) => None,
                }
            }
            None => None,
        };
        Ok(serde_json::to_vec(&Reply::new(
            &review.request.uid,
            &Verdict::allow(),
            patch,
        ))?)
    })
}

/// The object's spec exactly as the API server sent it: the patch applies
/// to this, not to the spec as the type would write it.
#[derive(Deserialize)]
struct GivenSpec {
    #[serde(default)]
    spec: Option<Value>,
}

/// The JSON patch (RFC 6902, as bytes) that makes `given` carry what the
/// hook changed from `before` to `after`; `None` when it changed nothing.
///
/// The hook's `before` and `after` are the spec as its type writes it,
/// which may differ from what was sent (a `null` the type writes for an
/// absent field, a value it leaves out): only the hook's own changes are
/// carried over, so nothing else in the object moves.
pub(super) fn spec_patch(
    given: Option<Value>,
    before: &Value,
    after: &Value,
) -> Result<Option<Vec<u8>>, serde_json::Error> {
    if before == after {
        return Ok(None);
    }
    let mut changed = given.clone().unwrap_or(Value::Null);
    carry(&mut changed, before, after);
    let wrap = |spec: Option<Value>| {
        let mut object = Map::new();
        if let Some(spec) = spec {
            object.insert("spec".to_owned(), spec);
        }
        Value::Object(object)
    };
    let patch = json_patch::diff(&wrap(given), &wrap(Some(changed)));
    if patch.0.is_empty() {
        return Ok(None);
    }
    serde_json::to_vec(&patch).map(Some)
}

/// Makes `target` change as `before` changed to `after`: members the hook
/// added, changed or removed, recursively; a member it left alone stays as
/// `target` has it, present or not.
fn carry(target: &mut Value, before: &Value, after: &Value) {
    if before == after {
        return;
    }
    let (Value::Object(target), Value::Object(before), Value::Object(after)) =
        (&mut *target, before, after)
    else {
        *target = after.clone();
        return;
    };
    for key in before.keys() {
        if !after.contains_key(key) {
            target.remove(key);
        }
    }
    for (key, now) in after {
        match (before.get(key), target.get_mut(key)) {
            (Some(was), _) if was == now => {}
            (Some(was), Some(there)) => carry(there, was, now),
            // A null the type writes for a field the object lacks: leave
            // it out, as the object has it.
            (_, None) if now.is_null() => {}
            (_, Some(there)) => *there = now.clone(),
            (_, None) => {
                target.insert(key.clone(), now.clone());
            }
        }
    }
}
