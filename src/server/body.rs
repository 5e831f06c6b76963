//! Reading a hook request's body: JSON only, bounded in size and in time.

use super::errors::ApiError;
use actix_web::HttpRequest;
use actix_web::http::header;
use actix_web::web::{self, Bytes, BytesMut};
use futures_util::StreamExt;
use std::time::Duration;

/// `application/json`, with or without parameters, or any `+json` type.
pub fn require_json(req: &HttpRequest) -> Result<(), ApiError> {
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
        Err(ApiError::UnsupportedMediaType {
            got: value.to_owned(),
        })
    }
}

/// Reads the whole body, refusing more than `limit` bytes (by
/// `Content-Length` before reading, and while reading) and a client slower
/// than `timeout`.
pub async fn read(
    req: &HttpRequest,
    mut payload: web::Payload,
    limit: usize,
    timeout: Duration,
) -> Result<Bytes, ApiError> {
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|len| len > limit) {
        return Err(ApiError::TooLarge { limit });
    }
    let read = async move {
        let mut buf = BytesMut::with_capacity(declared.unwrap_or(16 * 1024).min(limit));
        while let Some(chunk) = payload.next().await {
            let chunk = chunk.map_err(|e| ApiError::BodyRead(e.to_string()))?;
            if buf.len() + chunk.len() > limit {
                return Err(ApiError::TooLarge { limit });
            }
            buf.extend_from_slice(&chunk);
        }
        Ok(buf.freeze())
    };
    actix_web::rt::time::timeout(timeout, read)
        .await
        .map_err(|_| ApiError::BodyTimeout {
            seconds: timeout.as_secs(),
        })?
}
