//! Reading a hook request's body: JSON only, bounded in size, in time, and
//! by the process-wide memory budget.

use super::budget::{MemoryBudget, Reservation};
use super::errors::RequestError;
use actix_web::HttpRequest;
use actix_web::http::header;
use actix_web::web;
use futures_util::StreamExt;
use std::time::Duration;

/// `application/json`, with or without parameters, or any `+json` type.
pub fn require_json(req: &HttpRequest) -> Result<(), RequestError> {
    let value = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let essence = value
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
    {
        Ok(())
    } else {
        Err(RequestError::UnsupportedMediaType {
            got: value.to_owned(),
        })
    }
}

/// A request's body, read whole, and the share of the memory budget it holds
/// until dropped (after the hook has run).
#[derive(Debug)]
pub struct Buffered<'a> {
    pub bytes: Vec<u8>,
    _held: Reservation<'a>,
}

/// The smallest buffer a chunked body starts with.
const FIRST_BUFFER: usize = 16 * 1024;

/// A declared body's share of the budget grows in steps of this as its
/// bytes arrive: what it holds is at most one step more than it has sent.
pub const DECLARED_STEP: usize = 64 * 1024;

/// Reads the whole body, refusing more than `limit` bytes (by
/// `Content-Length` before reading, and while reading), a body the memory
/// `budget` cannot hold (when `Content-Length` says so, before reading if
/// the budget has not that much free now; in any case where what has
/// arrived would take it over), and a client slower than `timeout` for the
/// whole body.
///
/// A body holds budget for the bytes that have arrived, never for what it
/// only declares: a client that declares 32 MiB and sends nothing holds
/// nothing (docs/robustness.md).
pub async fn read<'a>(
    req: &HttpRequest,
    mut payload: web::Payload,
    limit: usize,
    timeout: Duration,
    budget: &'a MemoryBudget,
) -> Result<Buffered<'a>, RequestError> {
    // A body the whole budget cannot hold is never going to fit: 413, not a
    // 429 that Metacontroller would retry for ever.
    let limit = limit.min(budget.max());
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|len| len > limit) {
        return Err(RequestError::TooLarge { limit });
    }
    let over_budget = |_| RequestError::MemoryBudgetExceeded {
        budget: budget.max(),
    };
    // Refused on its head alone when it cannot fit now (it would be refused
    // half-sent otherwise); a check, not a hold.
    if declared.is_some_and(|len| len > budget.free()) {
        return Err(RequestError::MemoryBudgetExceeded {
            budget: budget.max(),
        });
    }
    let mut held = budget.empty();
    let read = async move {
        // A declared body gets its whole buffer at once (no copies as it
        // grows) and is counted by what has arrived: the buffer's pages are
        // only touched as bytes are written. A chunked body is counted by
        // its buffer's capacity, up to twice its length while it doubles.
        let mut buf = Vec::with_capacity(declared.unwrap_or(0));
        while let Some(chunk) = payload.next().await {
            let chunk = chunk.map_err(|e| RequestError::BodyRead(e.to_string()))?;
            let needed = buf.len() + chunk.len();
            if needed > limit {
                return Err(RequestError::TooLarge { limit });
            }
            if let Some(len) = declared {
                let step = needed.div_ceil(DECLARED_STEP) * DECLARED_STEP;
                held.grow_to(step.min(len).max(needed))
                    .map_err(over_budget)?;
            } else if needed > buf.capacity() {
                let capacity = needed.max(buf.capacity() * 2).max(FIRST_BUFFER).min(limit);
                held.grow_to(capacity).map_err(over_budget)?;
                buf.reserve_exact(capacity - buf.len());
            }
            buf.extend_from_slice(&chunk);
        }
        Ok(Buffered {
            bytes: buf,
            _held: held,
        })
    };
    // The reservation lives inside `read`: a timeout drops it with the
    // future, and so does a client that goes away.
    actix_web::rt::time::timeout(timeout, read)
        .await
        .map_err(|_| RequestError::BodyTimeout {
            seconds: timeout.as_secs(),
        })?
}
