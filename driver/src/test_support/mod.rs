//! The driver's test helpers: the planner's (the `demo` controller,
//! manifests, cluster objects), with a scripted API server
//! ([`scripted_api`]) and the context of a whole reconcile ([`context`]).

pub(crate) mod context;
pub(crate) mod scripted_api;

pub(crate) use metahook_planner::test_support::*;

/// An [`Obj`] as the driver's cache holds it.
pub(crate) trait Cached {
    fn cached(self) -> std::sync::Arc<crate::controller::cache::CachedObject>;
}

impl Cached for Obj {
    fn cached(self) -> std::sync::Arc<crate::controller::cache::CachedObject> {
        std::sync::Arc::new(crate::controller::cache::CachedObject::of(&self.0).expect("JSON"))
    }
}
