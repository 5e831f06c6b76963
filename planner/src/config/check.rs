//! The rules beyond the manifest's types, each refusal naming its field.
//!
//! From [`manifest`] to [`ControllerConfig`](super::ControllerConfig),
//! every message naming the field by its path
//! (`spec.childResources[0].updateStrategy.method`). A key the driver does
//! not know is refused rather than ignored, with a hint when it is a
//! Metacontroller feature outside the subset; required fields, defaults and
//! allowed values follow Metacontroller v4.17 (docs/metacontroller.md §2).
//!
//! Here: the [`Check`] every rule runs in, and the refusals they share. The
//! rules themselves: a manifest of either kind in
//! [`document`](super::document), a kind's own fields in
//! [`composite`](super::composite) and [`decorator`](super::decorator), the
//! hooks in [`hooks`](super::hooks), [`webhook`](super::webhook),
//! [`webhook_auth`](super::webhook_auth) and, per host,
//! [`endpoint`](super::endpoint).

use super::{ConfigError, manifest};
use std::time::Duration;

/// One manifest being checked: `source_name` goes into every error.
pub(super) struct Check<'a> {
    pub(super) source_name: &'a str,
}

impl Check<'_> {
    pub(super) fn invalid(&self, field: &str, message: impl Into<String>) -> ConfigError {
        ConfigError::Invalid {
            source_name: self.source_name.to_owned(),
            field: field.to_owned(),
            message: message.into(),
        }
    }

    pub(super) fn unsupported(&self, field: &str, hint: &str) -> ConfigError {
        ConfigError::Unsupported {
            source_name: self.source_name.to_owned(),
            field: field.to_owned(),
            hint: hint.to_owned(),
        }
    }

    /// Refuses the first key the manifest's types do not know; `hints`
    /// explain Metacontroller's features outside the subset.
    pub(super) fn known(&self, other: &manifest::Other, field: &str) -> Result<(), ConfigError> {
        let Some(key) = other.keys().next() else {
            return Ok(());
        };
        let hint = match key.as_str() {
            "preUpdateChild" | "postUpdateChild" => " (Metacontroller ignores these hooks too)",
            _ => "",
        };
        Err(self.unsupported(&join(field, key), hint))
    }

    /// A string that must be there and not be empty.
    pub(super) fn required(
        &self,
        value: Option<String>,
        field: &str,
    ) -> Result<String, ConfigError> {
        value
            .filter(|v| !v.is_empty())
            .ok_or_else(|| self.invalid(field, "is required"))
    }
}

/// `resyncPeriodSeconds`: Metacontroller floors the period at one second.
pub(super) fn resync_period(seconds: Option<i64>) -> Option<Duration> {
    seconds.map(|n| Duration::from_secs(n.max(1).unsigned_abs()))
}

/// `field.key`, or `key` at the top.
pub(super) fn join(field: &str, key: &str) -> String {
    if field.is_empty() {
        key.to_owned()
    } else {
        format!("{field}.{key}")
    }
}

/// `value` unless absent or empty.
pub(super) fn or_default(value: Option<String>, default: &str) -> String {
    value
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| default.to_owned())
}
