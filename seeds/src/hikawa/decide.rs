//! Where the song stands: whether the spec is valid, and what comes next (a
//! Zundoko or the Kiyoshi) and when, or that the song is over or held.

use super::crds::{Hikawa, HikawaSpec, MAX_INTERVAL_MILLIS, MAX_MAX_ZUNDOKOS};
use super::names::{MAX_NAME_LEN, zundoko_name};
use super::observed::Song;
use super::pacing;
use super::words::{Word, ready_to_kiyoshi};
use crate::reading;
use jiff::Timestamp;
use metahook_core::Parent;
use metahook_core::admission::FieldError;

/// The spec, if it is valid; otherwise every reason it is not, in one line.
pub(super) fn valid_spec(parent: &Parent<Hikawa>) -> Result<&HikawaSpec, String> {
    checked_spec(parent).map_err(reading::one_line)
}

/// The spec, if it is valid; otherwise every problem with it (what sync
/// reports and the validate hook refuses).
pub(super) fn checked_spec(parent: &Parent<Hikawa>) -> Result<&HikawaSpec, Vec<FieldError>> {
    reading::checked_spec(&parent.spec, |spec| {
        let mut problems = Vec::new();
        if !(0..=MAX_INTERVAL_MILLIS).contains(&spec.interval_millis) {
            problems.push(FieldError::new(
                "spec.intervalMillis",
                format!(
                    "{} is not between 0 and {MAX_INTERVAL_MILLIS}",
                    spec.interval_millis
                ),
            ));
        }
        if !(1..=MAX_MAX_ZUNDOKOS).contains(&spec.max_zundokos) {
            problems.push(FieldError::new(
                "spec.maxZundokos",
                format!(
                    "{} is not between 1 and {MAX_MAX_ZUNDOKOS}",
                    spec.max_zundokos
                ),
            ));
        }
        let longest = zundoko_name(&parent.metadata.name, spec.max_zundokos.max(1));
        if longest.len() > MAX_NAME_LEN {
            problems.push(FieldError::new(
                "metadata.name",
                format!(
                    "too long; Zundoko names such as {longest:?} would exceed {MAX_NAME_LEN} characters"
                ),
            ));
        }
        problems
    })
}

/// What comes next in a song that is not over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Next {
    Zundoko(u32),
    Kiyoshi,
}

/// Where the song stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    Kiyoshied,
    GaveUp,
    /// The spec is invalid: nothing more is said until it is fixed.
    Held,
    Due(Next, Timestamp),
}

pub(super) fn step(
    parent: &Parent<Hikawa>,
    spec: &Result<&HikawaSpec, String>,
    song: &Song,
    words: &[Word],
) -> Step {
    if song.kiyoshi.is_some() {
        return Step::Kiyoshied;
    }
    let Ok(spec) = spec else {
        return Step::Held;
    };
    // After the highest number, so a gap (a Zundoko deleted by hand) never
    // makes two children share a name; past u32::MAX there is no next name.
    let next_number = match song.zundokos.keys().next_back() {
        Some(n) => n.checked_add(1),
        None => Some(1),
    };
    let next = if ready_to_kiyoshi(words) {
        Next::Kiyoshi
    } else if let Some(n) = next_number.filter(|_| words.len() < spec.max_zundokos as usize) {
        Next::Zundoko(n)
    } else {
        return Step::GaveUp;
    };
    Step::Due(next, pacing::due(parent, song, spec.interval_millis))
}
