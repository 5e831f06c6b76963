//! Metacontroller-shaped hook requests of any size, for the benches, the
//! bad-input tests and `bench/load.sh` (through `examples/gen_request.rs`).
//!
//! Every object is built the way the API server stores it and Metacontroller
//! sends it (docs/metacontroller.md §1.2, §1.3): `managedFields` with a
//! `fieldsV1` tree, `ownerReferences`, the last-applied annotation
//! Metacontroller keeps, labels, and a `status`. The hooks skip most of this; the point is that
//! they pay for skipping it, as they do in a cluster.

//!
//! `objects`: the building blocks, for any controller; `seeds`: requests of
//! Hello, Hikawa and Foo.

mod objects;
mod seeds;

pub use objects::{
    Child, Keys, Owner, bytes, child, controller, deployment, object_map, sync_request, uid,
};
pub use seeds::{FOO_API, HIKAWA_API, HIKAWA_SAID_AT, foo_customize, foo_sync, hello, hikawa};
