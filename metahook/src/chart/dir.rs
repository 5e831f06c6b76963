//! A chart's directory: written from the generated files, and compared
//! with them (a controller's test that its checked-in chart is current).

use std::path::{Path, PathBuf};

/// A file of the chart's directory that could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum DirError {
    /// A file could not be written, or a directory made, or a stale file
    /// removed.
    #[error("writing {path} failed")]
    Write {
        /// The file, or the directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A file could not be read.
    #[error("reading {path} failed")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// The directories the chart's generated files fill: a file there that is
/// not generated any more (a controller removed) goes.
const GENERATED_DIRS: [&str; 6] = [
    "templates",
    "crds",
    "conversion",
    "admission",
    "metacontroller",
    "monitoring",
];

/// The files in the generated directories that `files` do not hold, by
/// their path in the chart.
fn stale(dir: &Path, files: &[(String, String)]) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    for sub in GENERATED_DIRS {
        let Ok(entries) = std::fs::read_dir(dir.join(sub)) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let relative = path
                .strip_prefix(dir)
                .map(|p| p.to_string_lossy().replace('\\', "/"))
                .unwrap_or_default();
            let generated = files.iter().any(|(p, _)| *p == relative);
            let is_chart_file = path
                .extension()
                .is_some_and(|x| x == "yaml" || x == "tpl" || x == "txt" || x == "json");
            if !generated && is_chart_file {
                out.push((relative, path));
            }
        }
    }
    out.sort();
    out
}

/// Writes `files` under `dir`, and removes from the directories the chart
/// generates the files it no longer does.
pub fn write(dir: &Path, files: &[(String, String)]) -> Result<(), DirError> {
    let write_err = |path: &Path| {
        let path = path.to_owned();
        move |source| DirError::Write { path, source }
    };
    for (_, path) in stale(dir, files) {
        std::fs::remove_file(&path).map_err(write_err(&path))?;
    }
    for (relative, text) in files {
        let path = dir.join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(write_err(parent))?;
        }
        std::fs::write(&path, text).map_err(write_err(&path))?;
    }
    Ok(())
}

/// What [`check_dir`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DirCheck {
    /// There was no directory: the chart was written there.
    Written,
    /// The directory holds exactly the chart.
    Current,
    /// These files (paths in the chart) are missing, differ, or are no
    /// longer generated.
    Differs(Vec<String>),
}

/// Whether `dir` holds exactly `files` (a chart from [`files`](super::files)):
/// what a controller's test asks of its checked-in chart. A missing `dir`
/// is written, as a crate's first test run writes its chart; a chart
/// that differs is left as it is.
pub fn check_dir(dir: &Path, files: &[(String, String)]) -> Result<DirCheck, DirError> {
    if !dir.exists() {
        write(dir, files)?;
        return Ok(DirCheck::Written);
    }
    let mut differs = Vec::new();
    for (relative, text) in files {
        let path = dir.join(relative);
        match std::fs::read_to_string(&path) {
            Ok(on_disk) if on_disk == *text => {}
            Ok(_) => differs.push(relative.clone()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => differs.push(relative.clone()),
            Err(source) => return Err(DirError::Read { path, source }),
        }
    }
    differs.extend(stale(dir, files).into_iter().map(|(relative, _)| relative));
    Ok(if differs.is_empty() {
        DirCheck::Current
    } else {
        DirCheck::Differs(differs)
    })
}
