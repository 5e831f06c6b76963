//! `new DIR`: a crate of its own for a new controller — one CRD type, its
//! sync and finalize hooks, a recorded request, snapshot and convergence
//! tests that pass as written, a README with its two commands, a
//! `.ci/run`, and the image built without a daemon — on this library, by
//! path to the checkout this binary was built from (or a released
//! version). Every name follows from the kind, group and version given:
//! no file is left saying another.
//!
//! Written to a directory beside `DIR` and renamed into place at the end,
//! so a failure leaves nothing half-written.

use crate::cli::NewArgs;
use files::{FILES, WIDGET};
use std::path::{Path, PathBuf};

/// Where the new crate finds metahook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Metahook {
    /// A checkout: its `metahook/` and `testing/` crates by path, and its
    /// Cargo.lock as the new crate's (the same dependency versions, so a
    /// shared target directory builds nothing twice).
    Checkout(PathBuf),
    /// A released version, from the registry.
    Version(String),
}

impl Metahook {
    /// The checkout this binary was built from, if it is still there;
    /// else this binary's release, from the registry (a metahook built
    /// from crates.io has no checkout).
    pub fn built_from() -> Self {
        let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
        let root = crate_dir.parent().unwrap_or(crate_dir);
        if root.join("testing/Cargo.toml").is_file() && root.join("Cargo.lock").is_file() {
            Metahook::Checkout(root.to_owned())
        } else {
            Metahook::Version(env!("CARGO_PKG_VERSION").to_owned())
        }
    }
}

/// What to scaffold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSettings {
    /// The new crate's directory: new or empty.
    pub dir: PathBuf,
    /// The custom resource's kind, UpperCamelCase (`Gadget`).
    pub kind: String,
    /// Its API group, a DNS subdomain with a dot (`gadgets.example.com`
    /// has group `example.com`).
    pub group: String,
    /// Its API version (`v1`, `v1alpha1`, `v2beta3`).
    pub version: String,
    /// The crate's (and binary's, and chart's) name; `<kind>-operator` by
    /// default.
    pub name: Option<String>,
    /// Where it finds metahook.
    pub metahook: Metahook,
}

/// A scaffold that cannot be written, and why.
#[derive(Debug, thiserror::Error)]
pub enum NewError {
    /// The kind is not UpperCamelCase.
    #[error(
        "the kind {0:?} must be UpperCamelCase: an ASCII capital letter, then letters and digits (at most 43, for the controller's finalizer)"
    )]
    Kind(String),
    /// The group is not a DNS subdomain with a dot.
    #[error(
        "the group {0:?} must be a DNS subdomain with at least one dot, lowercase (e.g. example.com)"
    )]
    Group(String),
    /// The version is not a Kubernetes API version.
    #[error("the version {0:?} must be a Kubernetes API version: v1, v1alpha1, v2beta3...")]
    Version(String),
    /// The name cannot be a crate's and a chart's.
    #[error(
        "the name {0:?} must be a crate name a chart can take: lowercase letters, digits and '-', starting with a letter, at most 53"
    )]
    Name(String),
    /// The directory holds something already.
    #[error("{0} exists and is not empty: `new` writes a crate into a new or empty directory")]
    NotEmpty(PathBuf),
    /// A file could not be written; what was written is gone.
    #[error("writing {path} failed (nothing was left behind)")]
    Write {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// The names a scaffold's markers stand for.
struct Names {
    pairs: Vec<(&'static str, String)>,
}

impl Names {
    /// The Widget's names made markers first (a marker holds none of
    /// them), then the markers filled.
    fn fill(&self, text: &str) -> String {
        let marked = WIDGET
            .iter()
            .fold(text.to_owned(), |t, (name, marker)| t.replace(name, marker));
        self.pairs
            .iter()
            .fold(marked, |t, (marker, value)| t.replace(marker, value))
    }
}

/// kube's plural of a lowercase kind (`kube-derive`'s rule).
pub fn plural(word: &str) -> String {
    if ["s", "x", "z", "ch", "sh"]
        .iter()
        .any(|e| word.ends_with(e))
    {
        return format!("{word}es");
    }
    let mut chars = word.chars();
    if chars.next_back() == Some('y')
        && chars
            .next_back()
            .is_some_and(|c| !matches!(c, 'a' | 'e' | 'i' | 'o' | 'u'))
    {
        return format!("{}ies", &word[..word.len() - 1]);
    }
    format!("{word}s")
}

fn dns_subdomain_with_dot(group: &str) -> bool {
    group.contains('.') && metahook_core::names::check_dns_subdomain(group).is_ok()
}

fn api_version(version: &str) -> bool {
    let Some(rest) = version.strip_prefix('v') else {
        return false;
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || rest.starts_with('0') {
        return false;
    }
    let tail = &rest[digits..];
    tail.is_empty()
        || ["alpha", "beta"].iter().any(|stage| {
            tail.strip_prefix(stage).is_some_and(|n| {
                !n.is_empty() && !n.starts_with('0') && n.bytes().all(|b| b.is_ascii_digit())
            })
        })
}

impl NewSettings {
    fn names(&self) -> Result<Names, NewError> {
        // The controller is named after the kind: its finalizer's name
        // (core's `Controller::check`) bounds it.
        let kind_ok = self.kind.len() <= 43
            && self.kind.starts_with(|c: char| c.is_ascii_uppercase())
            && self.kind.chars().all(|c| c.is_ascii_alphanumeric());
        if !kind_ok {
            return Err(NewError::Kind(self.kind.clone()));
        }
        if !dns_subdomain_with_dot(&self.group) {
            return Err(NewError::Group(self.group.clone()));
        }
        if !api_version(&self.version) {
            return Err(NewError::Version(self.version.clone()));
        }
        let kind_lower = self.kind.to_lowercase();
        let name = self
            .name
            .clone()
            .unwrap_or_else(|| format!("{kind_lower}-operator"));
        let name_ok = name.len() <= 53
            && name.starts_with(|c: char| c.is_ascii_lowercase())
            && !name.ends_with('-')
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if !name_ok {
            return Err(NewError::Name(name));
        }
        let (metahook, testing) = match &self.metahook {
            Metahook::Checkout(root) => (
                format!(
                    "metahook = {{ path = {:?}, default-features = false }}",
                    root.join("metahook").display().to_string()
                ),
                format!(
                    "metahook-testing = {{ path = {:?} }}",
                    root.join("testing").display().to_string()
                ),
            ),
            Metahook::Version(v) => (
                format!("metahook = {{ version = \"{v}\", default-features = false }}"),
                format!("metahook-testing = \"{v}\""),
            ),
        };
        Ok(Names {
            pairs: vec![
                ("@@METAHOOK_TESTING@@", testing),
                ("@@METAHOOK@@", metahook),
                ("@@CRATE_IDENT@@", name.replace('-', "_")),
                ("@@CRATE@@", name),
                ("@@KIND_LOWER@@", kind_lower.clone()),
                ("@@PLURAL@@", plural(&kind_lower)),
                ("@@KIND@@", self.kind.clone()),
                ("@@GROUP@@", self.group.clone()),
                ("@@VERSION@@", self.version.clone()),
            ],
        })
    }
}

/// `new`: the crate, and what to run next.
pub fn run(args: &NewArgs) -> Result<(), NewError> {
    let dir_name = args
        .dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = args.name.clone().unwrap_or(dir_name);
    let settings = NewSettings {
        dir: args.dir.clone(),
        kind: args.kind.clone().unwrap_or_else(|| kind_of(&name)),
        group: args.group.clone(),
        version: args.version.clone(),
        name: Some(name),
        metahook: match (&args.metahook_version, &args.metahook_path) {
            (Some(version), _) => Metahook::Version(version.clone()),
            (None, Some(path)) => Metahook::Checkout(path.clone()),
            (None, None) => Metahook::built_from(),
        },
    };
    let written = new(&settings)?;
    let dir = args.dir.display();
    println!(
        "wrote {} files to {dir}: the {} controller. Next:\n  cd {dir}\n  cargo run --release    # serve its hooks\n  scripts/test.sh        # every test, and its chart in chart/",
        written.len(),
        settings.kind
    );
    Ok(())
}

/// `gadget-operator` → `Gadget`: the name without `-operator` or
/// `-controller`, each word capitalised.
pub fn kind_of(name: &str) -> String {
    let base = name
        .strip_suffix("-operator")
        .or_else(|| name.strip_suffix("-controller"))
        .unwrap_or(name);
    base.split(['-', '_'])
        .map(|word| {
            let mut chars = word.chars();
            chars
                .next()
                .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// Writes the new crate; returns the files written, relative to `dir`.
pub fn new(settings: &NewSettings) -> Result<Vec<String>, NewError> {
    let names = settings.names()?;
    let dir = &settings.dir;
    let empty = match std::fs::read_dir(dir) {
        Ok(mut entries) => entries.next().is_none(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
        Err(source) => {
            return Err(NewError::Write {
                path: dir.clone(),
                source,
            });
        }
    };
    if !empty {
        return Err(NewError::NotEmpty(dir.clone()));
    }
    let staging = staging_dir(dir);
    let written = write_all(&staging, &names, settings).inspect_err(|_| {
        let _ = std::fs::remove_dir_all(&staging);
    })?;
    let into_place = (|| {
        if dir.exists() {
            std::fs::remove_dir(dir)?;
        }
        std::fs::rename(&staging, dir)
    })();
    into_place.map_err(|source| {
        let _ = std::fs::remove_dir_all(&staging);
        NewError::Write {
            path: dir.clone(),
            source,
        }
    })?;
    Ok(written)
}

/// A directory beside `dir`, on the same filesystem, for the rename.
fn staging_dir(dir: &Path) -> PathBuf {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "new".to_owned());
    dir.with_file_name(format!(".{name}.metahook-new-{}", std::process::id()))
}

fn write_all(
    staging: &Path,
    names: &Names,
    settings: &NewSettings,
) -> Result<Vec<String>, NewError> {
    let write_err = |path: &Path| {
        let path = path.to_owned();
        move |source| NewError::Write { path, source }
    };
    let mut written = Vec::new();
    for (path, text, executable) in FILES {
        let relative = names.fill(path);
        let target = staging.join(&relative);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(write_err(parent))?;
        }
        std::fs::write(&target, names.fill(text)).map_err(write_err(&target))?;
        if *executable {
            set_executable(&target).map_err(write_err(&target))?;
        }
        written.push(relative);
    }
    format_rust(staging, &written);
    // The checkout's lock: the same versions, nothing built twice.
    if let Metahook::Checkout(root) = &settings.metahook {
        let lock = root.join("Cargo.lock");
        if lock.exists() {
            let target = staging.join("Cargo.lock");
            std::fs::copy(&lock, &target).map_err(write_err(&target))?;
            if fit_lock(staging) {
                written.push("Cargo.lock".to_owned());
            } else {
                // The first build resolves one; versions may differ.
                std::fs::remove_file(&target).map_err(write_err(&target))?;
            }
        }
    }
    Ok(written)
}

/// The Rust files as rustfmt lays them out: the templates are laid out for
/// the Widget's names, and a longer kind or crate name pushes a line past
/// rustfmt's width. Left as written when rustfmt is not there (the crate's
/// own `cargo fmt` then says so).
fn format_rust(staging: &Path, written: &[String]) {
    let files: Vec<PathBuf> = written
        .iter()
        .filter(|file| file.ends_with(".rs"))
        .map(|file| staging.join(file))
        .collect();
    let rustfmt = std::env::var_os("RUSTFMT").unwrap_or_else(|| "rustfmt".into());
    // The scaffold's Cargo.toml says edition 2024.
    let _ = std::process::Command::new(rustfmt)
        .args(["--edition", "2024"])
        .args(&files)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
}

/// The copied lock made the new crate's: it added, the checkout's other
/// crates removed, every version kept (`cargo update --workspace`,
/// offline). False when cargo is not there or could not.
fn fit_lock(dir: &Path) -> bool {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    std::process::Command::new(cargo)
        .args(["update", "--workspace", "--offline", "--quiet"])
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[cfg(unix)]
fn set_executable(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
}

#[cfg(not(unix))]
fn set_executable(_: &Path) -> std::io::Result<()> {
    Ok(())
}

mod files;
#[cfg(test)]
mod tests;
