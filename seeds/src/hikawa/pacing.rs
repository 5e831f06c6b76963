//! When the next word may be said. Each child carries the time it was first
//! desired in the [`SAID_AT`] annotation, carried over unchanged from then
//! on; the next word is paced from the newest one observed. The hook never
//! reads its own status back, so a stale parent status cannot make a word
//! early.
//!
//! The first word is paced from `creationTimestamp`, which the API server
//! truncates to the second: it may come up to a second sooner after the real
//! creation than an interval. A child that lost its annotation is paced from
//! its own `creationTimestamp` plus one second (late rather than early), and
//! that time is written back as its annotation.

use super::crds::Hikawa;
use super::observed::{ObservedWord, SAID_AT, Song};
use jiff::{SignedDuration, Timestamp};
use metahook_core::Parent;

impl ObservedWord {
    /// When this word was said: its annotation; failing that, one second
    /// after its `creationTimestamp` (which is truncated to the second, so
    /// this errs late, never early).
    pub fn said_at(&self) -> Option<Timestamp> {
        self.metadata
            .annotations
            .get(SAID_AT)
            .and_then(|s| s.parse().ok())
            .or_else(|| {
                let created = self.metadata.creation_timestamp.as_ref()?.0;
                created.checked_add(SignedDuration::from_secs(1)).ok()
            })
    }

    /// The annotation the desired child carries: the observed one verbatim,
    /// or (if it was lost) the time it is paced from, so it stays put.
    pub(super) fn said_at_annotation(&self) -> Option<String> {
        self.metadata
            .annotations
            .get(SAID_AT)
            .cloned()
            .or_else(|| self.said_at().map(|t| t.to_string()))
    }
}

impl Song<'_> {
    /// The newest said-at of any observed child.
    fn newest(&self) -> Option<Timestamp> {
        self.zundokos
            .values()
            .chain(self.kiyoshi.iter())
            .chain(self.others.iter())
            .filter_map(|c| c.said_at())
            .max()
    }
}

/// When the next word is due: `interval_millis` after the newest said-at
/// observed, or after the Hikawa's `creationTimestamp` for the first word;
/// at once if neither is known.
pub(super) fn due(parent: &Parent<Hikawa>, song: &Song, interval_millis: i64) -> Timestamp {
    let since = song
        .newest()
        .or_else(|| parent.metadata.creation_timestamp.as_ref().map(|t| t.0));
    match since {
        // An overflowing time (a said-at in the year 9999) is never due.
        Some(t) => t
            .checked_add(SignedDuration::from_millis(interval_millis))
            .unwrap_or(Timestamp::MAX),
        None => Timestamp::MIN,
    }
}

/// Positive durations as fractional seconds; `None` otherwise (Metacontroller
/// ignores a resync of zero, and the child's appearance re-syncs anyway).
pub(super) fn seconds(d: SignedDuration) -> Option<f64> {
    (d > SignedDuration::ZERO).then(|| d.as_secs_f64())
}
