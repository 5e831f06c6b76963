//! [`Conditions`]: a status's conditions as a field type, read bounded.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use schemars::JsonSchema;
use serde::de::{Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::ops::Deref;

/// How many conditions a [`Conditions`] keeps at most when read.
pub const MAX_KEPT: usize = 64;

/// A status's `conditions`, as Kubernetes lists them
/// (`metav1.Condition`): the field type of a status that has any.
///
/// Read, it keeps the first condition of each type and status, at most
/// [`MAX_KEPT`], however long the list (a status is anyone's to write, and
/// a hook's memory must not grow with it); every one is still checked.
/// Absent or `null`, it is empty. Written, it is the list itself: the same
/// JSON and the same schema as a `Vec<Condition>`.
///
/// ```
/// use metahook_core::conditions::Conditions;
///
/// let read: Conditions = serde_json::from_value(serde_json::json!([
///     {"type": "Ready", "status": "True", "reason": "Written", "message": "",
///      "lastTransitionTime": "2026-11-22T03:00:00Z"},
///     {"type": "Ready", "status": "True", "reason": "Again", "message": "",
///      "lastTransitionTime": "2026-11-22T04:00:00Z"},
/// ]))?;
/// assert_eq!(read.len(), 1);
/// assert!(read.is_true("Ready") && !read.is_false("Ready"));
/// assert_eq!(read.get("Ready").map(|c| c.reason.as_str()), Some("Written"));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, JsonSchema)]
#[serde(transparent)]
pub struct Conditions(Vec<Condition>);

impl Conditions {
    /// The condition of type `type_` (the first, if a status has several).
    pub fn get(&self, type_: &str) -> Option<&Condition> {
        self.0.iter().find(|c| c.type_ == type_)
    }

    /// Whether the condition of type `type_` is there and `True`.
    pub fn is_true(&self, type_: &str) -> bool {
        self.get(type_).is_some_and(|c| c.status == "True")
    }

    /// Whether the condition of type `type_` is there and `False` (not
    /// merely absent or `Unknown`).
    pub fn is_false(&self, type_: &str) -> bool {
        self.get(type_).is_some_and(|c| c.status == "False")
    }

    /// The list.
    pub fn into_vec(self) -> Vec<Condition> {
        self.0
    }
}

impl Deref for Conditions {
    type Target = [Condition];
    fn deref(&self) -> &[Condition] {
        &self.0
    }
}

impl From<Vec<Condition>> for Conditions {
    fn from(conditions: Vec<Condition>) -> Self {
        Conditions(conditions)
    }
}

impl From<Conditions> for Vec<Condition> {
    fn from(conditions: Conditions) -> Self {
        conditions.0
    }
}

impl<'a> IntoIterator for &'a Conditions {
    type Item = &'a Condition;
    type IntoIter = std::slice::Iter<'a, Condition>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl<'de> Deserialize<'de> for Conditions {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // As an option: a field left out reads as none, with no attribute.
        d.deserialize_option(MaybeList).map(Conditions)
    }
}

/// `null` (or a missing field) as no conditions, a list as [`FirstOfEach`] reads it.
struct MaybeList;

impl<'de> Visitor<'de> for MaybeList {
    type Value = Vec<Condition>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of conditions")
    }
    fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(Vec::new())
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(Vec::new())
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(FirstOfEach(|kept, _| kept < MAX_KEPT))
    }
}

/// Visits a list of conditions, keeping the first of each type and status
/// that the filter admits, given how many are kept already; every
/// condition is still decoded, and so checked.
pub(crate) struct FirstOfEach(pub(crate) fn(usize, &Condition) -> bool);

impl<'de> Visitor<'de> for FirstOfEach {
    type Value = Vec<Condition>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of conditions")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut kept: Vec<Condition> = Vec::new();
        while let Some(c) = seq.next_element::<Condition>()? {
            if (self.0)(kept.len(), &c)
                && !kept
                    .iter()
                    .any(|k| k.type_ == c.type_ && k.status == c.status)
            {
                kept.push(c);
            }
        }
        Ok(kept)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Deserialize)]
    struct Status {
        conditions: Conditions,
    }

    fn condition(n: usize) -> serde_json::Value {
        json!({"type": format!("T{n}"), "status": "True", "reason": "R", "message": "",
               "lastTransitionTime": "2026-11-22T03:00:00Z"})
    }

    #[test]
    fn a_field_without_attributes_reads_bounded_and_absent_as_empty() {
        let long: Vec<_> = (0..1000).map(condition).collect();
        let status: Status = serde_json::from_value(json!({"conditions": long})).unwrap();
        assert_eq!(status.conditions.len(), MAX_KEPT);
        let absent: Status = serde_json::from_value(json!({})).unwrap();
        assert!(absent.conditions.is_empty());
        let null: Status = serde_json::from_value(json!({"conditions": null})).unwrap();
        assert!(null.conditions.is_empty());
        // Each one is still checked.
        let bad = serde_json::from_value::<Status>(json!({"conditions": [{"type": 1}]}));
        assert!(bad.is_err());
    }

    #[test]
    fn written_as_the_list_itself() {
        let conditions = Conditions::from(vec![
            serde_json::from_value::<Condition>(condition(1)).unwrap(),
        ]);
        assert_eq!(
            serde_json::to_value(&conditions).unwrap(),
            json!([condition(1)])
        );
        assert_eq!(
            serde_json::to_value(schemars::schema_for!(Conditions)).unwrap()["type"],
            "array"
        );
    }
}
