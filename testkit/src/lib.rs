//! What metahook's tests and benches share: the fixtures and their accepted
//! answers, generated Metacontroller-shaped requests of any size, a small
//! in-memory Metacontroller for the Hikawa hook, and the hook service on a
//! real socket with raw HTTP(S) clients, certificates for them, and
//! hostile request shapes. Test code, not API.
#![forbid(unsafe_code)]

pub mod certs;
pub mod fixtures;
pub mod hikawa_sim;
pub mod hostile;
pub mod https;
pub mod lenient;
pub mod requests;
pub mod server;

pub use fixtures::{Fixture, NOW, fixtures, now, pretty, root, snapshot};
pub use server::{RealServer, Response};
