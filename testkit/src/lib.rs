//! What metahook's tests and benches share. Test code, not API.
//!
//! The fixtures and their accepted answers, generated Metacontroller-shaped
//! requests of any size, a small in-memory Metacontroller for the Hikawa
//! hook, and the hook service on a real socket with raw HTTP(S) clients,
//! certificates for them, and hostile request shapes: written once here so
//! that the hooks', the service's and the driver's tests build them alike.
//!
//! - [`fixtures`](mod@fixtures): the requests under `fixtures/`, the time they are
//!   rendered at, their snapshots; [`requests`]: requests of any size;
//!   [`hostile`]: requests built to make decoding expensive;
//!   [`hikawa_sim`]: Metacontroller in memory, for the Hikawa hook;
//! - [`server`]: the hook service on a real socket ([`RealServer`]) and a
//!   raw HTTP/1.1 client; [`lenient`]: a client for answers that come
//!   before the body is sent; [`https`] and [`certs`]: the same over TLS.
//!
//! ## Example
//!
//! Every fixture through the service on a real socket:
//!
//! ```
//! use metahook_testkit::{RealServer, fixtures};
//!
//! let server = RealServer::start(RealServer::settings(), metahook_seeds::controllers());
//! let hello = fixtures().into_iter().find(|f| f.controller == "hello").ok_or("a fixture")?;
//! let answer = server.post(&hello.url(), "application/json", &hello.body());
//! assert_eq!(answer.status, 200);
//! assert!(answer.json()["children"].is_array());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]

pub mod certs;
pub mod fixtures;
pub mod hikawa_sim;
pub mod hostile;
pub mod https;
pub mod lenient;
pub mod metrics_text;
pub mod requests;
pub mod server;

pub use fixtures::{
    Fixture, NOW, admission_fixtures, conversion_fixtures, every_fixture, fixtures, now, pretty,
    root, snapshot,
};
pub use server::{RealServer, Response};
