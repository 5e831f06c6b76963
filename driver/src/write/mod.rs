//! What a reconcile writes: a plan's operations performed against the API
//! server ([`execute`]), what was last written, so an unchanged child costs
//! no call ([`memory`]), and Events on parents ([`events`]).

pub mod events;
pub mod execute;
pub mod memory;
