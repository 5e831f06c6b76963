//! One controller at run time: what its reconciles share ([`context`]),
//! the caches of its types ([`cache`]), which parents a change queues
//! ([`triggers`], with [`ignored_status`] and the customize answers kept
//! in [`customized`]), the [`queue`], the loop that reconciles them
//! ([`worker`]), the per-parent [`backoff`] after a failure, and what a
//! warm [`standby`] keeps until it leads.

pub mod backoff;
pub mod cache;
pub mod context;
pub mod customized;
pub mod ignored_status;
pub mod queue;
pub mod standby;
pub mod triggers;
pub mod worker;
