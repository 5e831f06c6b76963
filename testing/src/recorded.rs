//! Requests recorded as Metacontroller sends them, one `<name>.json` file
//! each in a directory (a crate's `fixtures/`), answered by a controller's
//! hooks as the service calls them: to snapshot every answer, and to check
//! the steps that matter.

use crate::requests::{CallError, call};
use jiff::Timestamp;
use metahook_core::{Controller, HookKind};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The requests recorded in one directory.
///
/// ```no_run
/// # fn controller() -> metahook_core::Controller { unimplemented!() }
/// use metahook_core::HookKind;
/// use metahook_testing::Recorded;
///
/// let fixtures = Recorded::in_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures"));
/// let now = "2026-11-22T03:00:00Z".parse()?;
/// for name in fixtures.names()? {
///     let answer = fixtures.answer(&controller(), HookKind::Sync, &name, now)?;
///     // insta::assert_json_snapshot!(name.as_str(), answer);
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    dir: PathBuf,
}

/// Why a recorded request has no answer.
#[derive(Debug, thiserror::Error)]
pub enum RecordedError {
    /// The directory, or the request, could not be read.
    #[error("reading {path} failed")]
    Read {
        /// What could not be read.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The hook gave no answer: said as the hook said it.
    #[error(transparent)]
    Call(#[from] CallError),
}

impl Recorded {
    /// The requests in `dir`: every `*.json` file there.
    pub fn in_dir(dir: impl Into<PathBuf>) -> Self {
        Recorded { dir: dir.into() }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Each request's name (its file's, without `.json`), in order.
    pub fn names(&self) -> Result<Vec<String>, RecordedError> {
        let read = |source| RecordedError::Read {
            path: self.dir.clone(),
            source,
        };
        let mut names = Vec::new();
        for entry in std::fs::read_dir(&self.dir).map_err(read)? {
            let path = entry.map_err(read)?.path();
            if path.extension().is_some_and(|e| e == "json")
                && let Some(name) = path.file_stem().and_then(|s| s.to_str())
            {
                names.push(name.to_owned());
            }
        }
        names.sort();
        Ok(names)
    }

    /// `controller`'s answer to the request `name` from its `hook` at
    /// `now`, as the service sends it, as JSON.
    pub fn answer(
        &self,
        controller: &Controller,
        hook: HookKind,
        name: &str,
        now: Timestamp,
    ) -> Result<Value, RecordedError> {
        let path = self.dir.join(format!("{name}.json"));
        let body = std::fs::read(&path).map_err(|source| RecordedError::Read { path, source })?;
        Ok(call(controller, hook, &body, now)?)
    }
}
