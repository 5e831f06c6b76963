//! Go duration strings (`300ms`, `1.5s`, `1m30s`), read with kube's parser.
//!
//! kube's [`Duration`](kube::core::Duration) reads them as Metacontroller
//! reads a `metav1.Duration`; this module adds the checks kube's parser
//! leaves out. kube's parser (kube-core 5.0.0, its `duration` module) takes some
//! text Go's `time.ParseDuration` refuses, and panics on some: it reads the
//! empty string, `+` and `-` as zero, `5s0` as 5s (a trailing `0` ends its
//! loop), `1s+5s` as 6s, `--5s` as -5s and `+-5s` as 5s; it panics on a
//! negative part after the first (`1h-5m`: `std::time::Duration::mul_f64`
//! of a negative number) and on a total past `std::time::Duration`'s range.
//! [`go_shaped`] refuses all of these before kube sees the text.

use std::time::Duration;

/// Why a timeout is not a Go duration.
#[derive(Debug, thiserror::Error)]
pub(super) enum GoDurationError {
    /// kube's parser refused it.
    #[error(transparent)]
    Parse(#[from] kube::core::duration::ParseError),
    /// [`go_shaped`] refused it.
    #[error("a sign only at the start, a unit at the end, at most {MAX_DIGITS} digits")]
    Shape,
}

/// At most this many digits: even all of them in hours, summed over every
/// part, stay under `std::time::Duration`'s 2^64 seconds (10^15 h is
/// 3.6 × 10^18 s), so kube's arithmetic cannot overflow. Go's own limit is
/// about 2562047h, 7 digits.
const MAX_DIGITS: usize = 15;

/// The duration `text` says; a negative one is zero, the only use being
/// Metacontroller's "zero or negative means the default".
pub(super) fn go_duration(text: &str) -> Result<Duration, GoDurationError> {
    if !go_shaped(text) {
        return Err(GoDurationError::Shape);
    }
    let parsed: kube::core::Duration = text.parse()?;
    Ok(if parsed.is_negative() {
        Duration::ZERO
    } else {
        parsed.into()
    })
}

/// `0`, or one optional leading sign, then parts that end in a unit, with
/// no sign among them and at most [`MAX_DIGITS`] digits.
fn go_shaped(text: &str) -> bool {
    let body = text.strip_prefix(['+', '-']).unwrap_or(text);
    body == "0"
        || (body.ends_with(char::is_alphabetic)
            && !body.contains(['+', '-'])
            && body.chars().filter(char::is_ascii_digit).count() <= MAX_DIGITS)
}
