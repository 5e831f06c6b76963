//! Whether a live child already is what the plan wants of it, so that no
//! write is planned: the same object as the last apply and unchanged since
//! ([`still_as_applied`]), carrying the fingerprint of the same body and
//! every field of it ([`carries`]), or holding every field the hook asked
//! for ([`contains`], [`as_desired`]).

use super::applied::Applied;
use super::apply::{APPLIED, fingerprint_text};
use kube::ResourceExt;
use kube::core::DynamicObject;
use serde_json::Value;

/// Whether the observed child is still what the last apply of this same
/// body produced: same object (UID), and not changed since (generation, or
/// resourceVersion for types without a generation).
pub(super) fn still_as_applied(applied: &Applied, fingerprint: u64, obs: &DynamicObject) -> bool {
    if applied.fingerprint != fingerprint
        || Some(applied.uid.as_str()) != obs.metadata.uid.as_deref()
    {
        return false;
    }
    match obs.metadata.generation {
        Some(g) if g > 0 => g == applied.generation,
        _ => obs.metadata.resource_version.as_deref() == Some(applied.resource_version.as_str()),
    }
}

/// Whether the observed child carries the fingerprint of `body` (so our
/// field manager owns exactly its fields) and still holds every field of it
/// with the same value: applying it again would change nothing. What
/// tells a restarted driver (no memory yet) to leave a child alone.
/// `live` is `obs` as JSON.
pub(super) fn carries(obs: &DynamicObject, live: &Value, fingerprint: u64, body: &Value) -> bool {
    obs.annotations().get(APPLIED).map(String::as_str)
        == Some(fingerprint_text(fingerprint).as_str())
        && contains(live, body)
}

/// Whether the observed child (`live`: `obs` as JSON) already is what
/// `desired` asks for: it holds every field of it — or it carries the
/// fingerprint of the apply planned now and holds every field with lists
/// of named items (containers, volumes, volume mounts, env) matched by
/// name, so that items the API server or admission added to them (a Pod's
/// token volume) do not count as a change.
pub(super) fn as_desired(
    obs: &DynamicObject,
    live: &Value,
    fingerprint: u64,
    desired: &Value,
) -> bool {
    contains(live, desired)
        || (obs.annotations().get(APPLIED) == Some(&fingerprint_text(fingerprint))
            && holds(live, desired, true))
}

/// Whether every field of `desired` is in `observed` with the same value:
/// maps by key, lists item by item (same length), so fields the server
/// defaulted do not count as a difference.
pub fn contains(observed: &Value, desired: &Value) -> bool {
    holds(observed, desired, false)
}

/// [`contains`]; with `by_name`, a list whose every desired item has a
/// `name` is matched item by name, extra live items allowed.
fn holds(observed: &Value, desired: &Value, by_name: bool) -> bool {
    let name = |v: &Value| v.get("name").and_then(Value::as_str).map(str::to_owned);
    match (observed, desired) {
        (Value::Object(o), Value::Object(d)) => d.iter().all(|(k, dv)| {
            o.get(k).is_some_and(|ov| holds(ov, dv, by_name))
                || (dv.is_null() && !o.contains_key(k))
        }),
        (Value::Array(o), Value::Array(d))
            if by_name && !d.is_empty() && d.iter().all(|i| name(i).is_some()) =>
        {
            d.iter().all(|di| {
                o.iter()
                    .find(|oi| name(oi) == name(di))
                    .is_some_and(|oi| holds(oi, di, by_name))
            })
        }
        (Value::Array(o), Value::Array(d)) => {
            o.len() == d.len() && o.iter().zip(d).all(|(ov, dv)| holds(ov, dv, by_name))
        }
        _ => observed == desired,
    }
}
