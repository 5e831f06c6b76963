//! Starting and stopping the driver: the controllers prepared before
//! anything connects ([`prepare`]), their types resolved ([`discovery`]),
//! the Lease taken ([`leader`]) and one worker per controller started
//! ([`run`]).

pub mod discovery;
pub mod leader;
pub mod prepare;
pub mod run;
