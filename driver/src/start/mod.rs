//! Starting and stopping the driver: the controllers prepared before
//! anything connects ([`prepare`]), their types resolved ([`discovery`],
//! [`resolve`]), the Lease taken ([`leader`]) and one worker per
//! controller started ([`run`]; what stops it: [`run::DriveError`]).

pub mod discovery;
mod error;
pub mod leader;
pub mod prepare;
pub mod resolve;
pub mod run;
