//! A controller's hooks: requests and responses as Metacontroller builds
//! and reads them ([`wire`], pure), the call itself in process or over HTTP
//! ([`call`]) and a webhook's TLS and credentials ([`auth`]).

pub mod auth;
pub mod call;
pub use metahook_planner::wire;
