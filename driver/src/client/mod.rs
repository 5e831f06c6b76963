//! The driver's connection to the API server: the kube `Client` built
//! ([`connect`]) as a stack of layers: every answer counted
//! ([`responses`]), the client-side budget ([`throttle`]) and whether it is
//! holding back writes that converge parents ([`pressure`]); and the
//! client that only reads, for `plan --live` ([`read_only`]).

pub mod connect;
pub mod pressure;
pub mod read_only;
pub mod responses;
pub mod throttle;
