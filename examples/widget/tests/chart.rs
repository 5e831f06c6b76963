//! chart/ is the Helm chart this crate's declaration writes: the first run
//! writes it; after a change to the declaration (a child type, a field of
//! the Widget), `cargo run -- chart --out-dir chart` writes it again.

use metahook::chart::{self, ChartSettings, DirCheck};

#[test]
fn the_chart_is_what_the_declaration_writes() {
    let controllers = [widget_operator::controller()];
    // Named as the binary names it: after the crate.
    let settings = ChartSettings::named(env!("CARGO_PKG_NAME"), &controllers);
    let files = chart::files(&controllers, &settings).unwrap();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("chart");
    match chart::check_dir(&dir, &files).unwrap() {
        DirCheck::Written | DirCheck::Current => {}
        DirCheck::Differs(paths) => panic!(
            "chart/ is not what the declaration writes ({}): cargo run -- chart --out-dir chart",
            paths.join(", ")
        ),
    }
}
