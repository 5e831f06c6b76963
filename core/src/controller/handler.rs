//! A typed hook as the [`Handler`] a controller holds: the request decoded
//! from its wire form and given the time, the hook's answer (or its
//! failure to answer) encoded. One function for every kind of hook of
//! both shapes.

use crate::answer::{Answer, CustomizeAnswer, DecoratorAnswer, IntoAnswer};
use crate::collection::ObjectSet;
use crate::decode::decode;
use crate::hook::{Handler, HookError};
use crate::request::{
    Customize, Decorate, ParentType, Request, WireCustomize, WireDecorate, WireRequest,
};
use jiff::Timestamp;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::sync::Arc;

/// A request as it arrives, and what the hook is given of it.
pub(super) trait Wire: DeserializeOwned {
    /// The request the hook reads.
    type Given;
    /// The request, at `now`.
    fn at(self, now: Timestamp) -> Self::Given;
}

impl<P: ParentType, C: ObjectSet<MC>, R: ObjectSet<MR>, MC, MR> Wire
    for WireRequest<P, C, R, MC, MR>
{
    type Given = Request<P, C, R>;
    fn at(self, now: Timestamp) -> Self::Given {
        WireRequest::at(self, now)
    }
}

impl<P: ParentType> Wire for WireCustomize<P> {
    type Given = Customize<P>;
    fn at(self, now: Timestamp) -> Self::Given {
        WireCustomize::at(self, now)
    }
}

impl<T: DeserializeOwned, A: ObjectSet<MA>, R: ObjectSet<MR>, MA, MR> Wire
    for WireDecorate<T, A, R, MA, MR>
{
    type Given = Decorate<T, A, R>;
    fn at(self, now: Timestamp) -> Self::Given {
        WireDecorate::at(self, now)
    }
}

/// An answer as the response's bytes.
pub(super) trait Encode {
    /// The response, as sent.
    fn encode(&self) -> Result<Vec<u8>, serde_json::Error>;
}

impl<S: Serialize> Encode for Answer<S> {
    fn encode(&self) -> Result<Vec<u8>, serde_json::Error> {
        self.to_json()
    }
}

impl<S: Serialize> Encode for DecoratorAnswer<S> {
    fn encode(&self) -> Result<Vec<u8>, serde_json::Error> {
        self.to_json()
    }
}

impl Encode for CustomizeAnswer {
    fn encode(&self) -> Result<Vec<u8>, serde_json::Error> {
        serde_json::to_vec(self)
    }
}

/// `hook`, which reads the requests that arrive as `W` and answers an `A`.
pub(super) fn handler<W, A, Out, F>(hook: F) -> Handler
where
    W: Wire,
    A: Encode,
    Out: IntoAnswer<A>,
    F: Fn(&W::Given) -> Out + Send + Sync + 'static,
{
    Arc::new(move |body, now| {
        let request: W = decode(body)?;
        let answer = hook(&request.at(now))
            .into_answer()
            .map_err(|message| HookError::Failed { message })?;
        Ok(answer.encode()?)
    })
}
