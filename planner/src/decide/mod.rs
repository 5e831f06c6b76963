//! What a reconcile decides, as pure functions with no API server: the
//! planner ([`plan`]) and what it decides over — the controller as driven
//! ([`model`]), label selectors ([`selector`]), the related objects the
//! customize rules select ([`related`]), Metacontroller's
//! ControllerRevision ([`revisions`]), and which waiting parent goes first
//! ([`order`]).

pub mod model;
pub mod order;
pub mod plan;
pub mod related;
pub mod revisions;
pub mod selector;
