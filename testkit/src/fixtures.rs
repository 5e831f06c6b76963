//! The hook requests under `fixtures/`, the time they are rendered at, and
//! their accepted answers (`seeds/tests/snapshots/`).

use metahook_core::{HookKind, Timestamp};
use std::path::{Path, PathBuf};

/// The time every fixture is rendered at.
pub const NOW: &str = "2026-11-22T03:00:00Z";

pub fn now() -> Timestamp {
    NOW.parse().expect("NOW is RFC 3339")
}

/// The repository (workspace) root.
pub fn root() -> PathBuf {
    let testkit = Path::new(env!("CARGO_MANIFEST_DIR"));
    testkit.parent().unwrap_or(testkit).to_path_buf()
}

/// One request file under `fixtures/<controller>/<case>.json`.
#[derive(Debug, Clone)]
pub struct Fixture {
    pub controller: String,
    pub case: String,
    pub hook: HookKind,
    pub path: PathBuf,
}

impl Fixture {
    pub fn body(&self) -> Vec<u8> {
        std::fs::read(&self.path).expect("fixture readable")
    }

    /// The insta snapshot name of this fixture's response.
    pub fn snapshot_name(&self) -> String {
        format!("{}__{}", self.controller, self.case)
    }

    pub fn url(&self) -> String {
        format!("/{}/{}", self.controller, self.hook)
    }
}

/// The hook a fixture is for, from its name: `finalize-*` and `customize-*`
/// go to those hooks, everything else to `sync`.
pub fn hook_of(case: &str) -> HookKind {
    if case.starts_with("finalize-") {
        HookKind::Finalize
    } else if case.starts_with("customize-") {
        HookKind::Customize
    } else {
        HookKind::Sync
    }
}

/// Every fixture of the hooks Metacontroller calls, sorted by controller
/// and case.
pub fn fixtures() -> Vec<Fixture> {
    fixtures_in("", hook_of)
}

/// Every AdmissionReview fixture (`fixtures/<controller>/admission/`):
/// `default-*` go to the default hook, everything else to validate.
pub fn admission_fixtures() -> Vec<Fixture> {
    fixtures_in("admission", |case| {
        if case.starts_with("default-") {
            HookKind::Default
        } else {
            HookKind::Validate
        }
    })
}

/// Every ConversionReview fixture (`fixtures/<controller>/conversion/`),
/// each for the convert hook.
pub fn conversion_fixtures() -> Vec<Fixture> {
    fixtures_in("conversion", |_| HookKind::Convert)
}

/// Every fixture of every hook: Metacontroller's ([`fixtures`]), then the
/// API server's ([`admission_fixtures`], [`conversion_fixtures`]).
pub fn every_fixture() -> Vec<Fixture> {
    let mut all = fixtures();
    all.extend(admission_fixtures());
    all.extend(conversion_fixtures());
    all
}

fn fixtures_in(sub: &str, hook_of: impl Fn(&str) -> HookKind) -> Vec<Fixture> {
    let mut out = Vec::new();
    let dir = root().join("fixtures");
    for controller in sorted_entries(&dir).into_iter().filter(|p| p.is_dir()) {
        let name = file_name(&controller);
        let cases = controller.join(sub);
        if !cases.is_dir() {
            continue;
        }
        for path in sorted_entries(&cases) {
            if path.extension().is_some_and(|e| e == "json") {
                let case = path
                    .file_stem()
                    .and_then(|s| s.to_str())
                    .expect("UTF-8 name")
                    .to_owned();
                out.push(Fixture {
                    controller: name.clone(),
                    hook: hook_of(&case),
                    case,
                    path,
                });
            }
        }
    }
    out
}

fn sorted_entries(dir: &Path) -> Vec<PathBuf> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("directory readable")
        .map(|e| e.expect("entry readable").path())
        .collect();
    entries.sort();
    entries
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .and_then(|s| s.to_str())
        .expect("UTF-8 name")
        .to_owned()
}

/// Indents JSON without reordering keys: what the snapshots hold.
pub fn pretty(compact: &[u8]) -> String {
    let mut out = Vec::new();
    let mut de = serde_json::Deserializer::from_slice(compact);
    let mut ser = serde_json::Serializer::pretty(&mut out);
    serde_transcode::transcode(&mut de, &mut ser).expect("valid JSON");
    String::from_utf8(out).expect("UTF-8")
}

/// The accepted snapshot of a fixture's response (`seeds/tests/snapshots/`).
pub fn snapshot(fixture: &Fixture) -> String {
    let path = root()
        .join("seeds/tests/snapshots")
        .join(format!("fixtures__{}.snap", fixture.snapshot_name()));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "snapshot {} missing ({e}); run the fixtures test",
            path.display()
        )
    });
    // An insta file is a `---`-delimited header, then the snapshot.
    let mut parts = text.splitn(3, "---\n");
    let (_, _, body) = (parts.next(), parts.next(), parts.next());
    body.expect("insta header").trim_end().to_owned()
}
