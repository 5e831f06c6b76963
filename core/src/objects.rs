//! Read-side views of the objects in a hook request.
//!
//! Metacontroller sends every object whole (`managedFields` and all). These
//! views name only the fields the hooks read; serde skips the rest without
//! building it, which is most of the cost of a large request.
//!
//! They also bound what decoding builds, whatever the request
//! (docs/robustness.md, "Hostile shapes"): a list or map of which the hooks
//! read one entry keeps that entry, not the list (owner references,
//! containers, annotations, labels: each entry is still checked for its
//! type); a name is at most as long as Kubernetes allows, since the hooks
//! copy the parent's into every child they desire; and a request holds at
//! most [`Observed::MAX`] objects of a type ([`crate::protocol::ObjectMap`]).

//!
//! - `meta`: [`Meta`], [`ParentMeta`], [`OwnerRef`] and the bounds on them;
//! - `parent`: [`ParentObject`], a parent with its spec read leniently;
//! - `visitors`: how what they keep is bounded while decoding.

mod meta;
mod parent;
mod visitors;

pub use meta::{
    KeptAnnotations, LAST_APPLIED, MAX_KEPT_ENTRIES, MAX_NAME_LEN, MAX_NAMESPACE_LEN, MAX_UID_LEN,
    Meta, OwnerRef, ParentMeta,
};
pub use parent::{ParentObject, SpecError};
pub use visitors::first_where;

/// A type of object that may appear in a request's `children` or `related`,
/// and the most of them one request may hold. Past it the request is
/// refused (422): what a hook builds grows with the objects, and no parent
/// of these controllers has that many (docs/robustness.md).
pub trait Observed {
    /// At most this many objects of the type in one request.
    const MAX: usize;
}

#[cfg(test)]
mod tests;
