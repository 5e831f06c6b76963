//! Admission: what the API server asks before it stores a parent. A
//! controller's `validate` hook answers whether a create, update or delete
//! may happen ([`Verdict`]); its `defaults` hook fills in what the schema's
//! `default` cannot say (a value from other fields), and the library sends
//! the API server the JSON patch from the object it was given to the one
//! the hook made. Both are pure, like `sync`: no cluster is needed to call
//! or test them, and the same rule can run at admission and in `sync`
//! (for an object stored before the webhook existed).

mod defaults;
mod review;
mod verdict;

pub use review::{Admission, Operation, User};
pub use verdict::{FieldError, Verdict};

pub(crate) use defaults::defaults_handler;
pub(crate) use review::validate_handler;

#[cfg(test)]
mod tests;
