//! A request's objects by type: the children (or attachments, or related
//! objects) of each type a hook reads, decoded straight into that type and
//! kept in a fixed order. Which types a hook reads is its request type's
//! set (`()`, one type, or a tuple: [`ObjectSet`]), and a hook can ask
//! only for a type of it ([`Contains`]).
//!
//! A request groups its objects as `{"Kind.apiVersion": {"key": object}}`.
//! Each group goes to the first type of the set that accepts it
//! ([`Object::accepts`](crate::Object::accepts)); a group no type accepts
//! is skipped without being built. The keys are not read (hook versions v1
//! and v2 key objects differently, and each object carries its own name):
//! a type's objects are sorted by namespace and name, so that whoever sent
//! the request — Metacontroller or the bundled driver — the hook sees the
//! same order and answers the same bytes.

mod by_type;
mod objects;
mod set;
mod wire;

pub use by_type::{Contains, ObjectsBy, Of};
pub(crate) use objects::GroupSeed;
pub use objects::Objects;
pub use set::{Member, ObjectSet};
pub(crate) use wire::WireObjects;
