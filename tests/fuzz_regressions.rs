//! Replays every input kept under `fuzz/regressions/<target>/` through the
//! same harness the fuzz targets use, so past findings stay fixed in a plain
//! `cargo test`, without cargo-fuzz or a nightly toolchain.

use metahook_fuzz_harness as harness;

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file() && p.file_name().is_some_and(|n| n != ".gitkeep"))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

#[test]
fn every_kept_fuzz_input_replays_cleanly() {
    let fixtures = harness::fixtures(&root().join("fixtures"));
    assert!(!fixtures.is_empty(), "no fixtures found");
    let mut replayed = 0;
    for target in ["decode", "hooks", "hooks_json"] {
        for file in files(&root().join("fuzz/regressions").join(target)) {
            let data = std::fs::read(&file).expect("readable");
            eprintln!("replaying {}", file.display());
            match target {
                "decode" => harness::decoder(&data),
                "hooks" => harness::every_hook(&data),
                _ => harness::structured(&fixtures, &data),
            }
            replayed += 1;
        }
    }
    assert!(
        replayed > 0,
        "fuzz/regressions holds no inputs: the replay would prove nothing"
    );
}

#[test]
fn unknown_regression_directories_are_not_silently_skipped() {
    for entry in std::fs::read_dir(root().join("fuzz/regressions")).expect("fuzz/regressions") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            assert!(
                ["decode", "hooks", "hooks_json"].contains(&name),
                "{} is not a fuzz target this test replays",
                path.display()
            );
        }
    }
}
