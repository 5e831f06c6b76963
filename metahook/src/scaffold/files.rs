//! What `new` writes: the scaffold's files, and the Widget's names in
//! those linked from examples/widget.

/// The scaffold's files, with `@@…@@` where the names go. A path may hold
/// markers too. Its Rust, fixture and snapshots are links to
/// examples/widget's (a crate CI builds and tests as it is), named for the
/// Widget: [`WIDGET`] turns those names into markers.
pub(super) const FILES: &[(&str, &str, bool)] = &[
    // Not `Cargo.toml`: a folder with one is a crate of its own, left out
    // of this one when it is packaged.
    (
        "Cargo.toml",
        include_str!("../../scaffold/Cargo.toml.in"),
        false,
    ),
    ("README.md", include_str!("../../scaffold/README.md"), false),
    (
        "Dockerfile",
        include_str!("../../scaffold/Dockerfile"),
        false,
    ),
    (
        ".gitignore",
        include_str!("../../scaffold/.gitignore"),
        false,
    ),
    (
        ".dockerignore",
        include_str!("../../scaffold/.dockerignore"),
        false,
    ),
    (".ci/run", include_str!("../../scaffold/.ci/run"), true),
    (
        "src/lib.rs",
        include_str!("../../scaffold/src/lib.rs"),
        false,
    ),
    (
        "src/main.rs",
        include_str!("../../scaffold/src/main.rs"),
        false,
    ),
    (
        "tests/@@KIND_LOWER@@.rs",
        include_str!("../../scaffold/tests/widget.rs"),
        false,
    ),
    (
        "tests/chart.rs",
        include_str!("../../scaffold/tests/chart.rs"),
        false,
    ),
    (
        "tests/fixtures/sync.json",
        include_str!("../../scaffold/tests/fixtures/sync.json"),
        false,
    ),
    (
        "tests/snapshots/@@KIND_LOWER@@__a_recorded_request_is_answered_as_before.snap",
        include_str!(
            "../../scaffold/tests/snapshots/widget__a_recorded_request_is_answered_as_before.snap"
        ),
        false,
    ),
    (
        "tests/snapshots/@@KIND_LOWER@@__a_@@KIND_LOWER@@_being_deleted_waits_for_its_config_map.snap",
        include_str!(
            "../../scaffold/tests/snapshots/widget__a_widget_being_deleted_waits_for_its_config_map.snap"
        ),
        false,
    ),
    (
        "scripts/test.sh",
        include_str!("../../scaffold/scripts/test.sh"),
        true,
    ),
    (
        "scripts/image.sh",
        include_str!("../../scaffold/scripts/image.sh"),
        true,
    ),
    (
        "scripts/lib/scratch-image.sh",
        include_str!("../../scaffold/scripts/lib/scratch-image.sh"),
        false,
    ),
];

/// The Widget's names in the files linked from examples/widget, and the
/// markers they become: longest first, so that `widgets` is the plural
/// before `widget` is the kind.
pub(super) const WIDGET: &[(&str, &str)] = &[
    ("widget-operator", "@@CRATE@@"),
    ("widget_operator", "@@CRATE_IDENT@@"),
    ("example.metahook.dev/v1", "@@GROUP@@/@@VERSION@@"),
    ("example.metahook.dev", "@@GROUP@@"),
    ("version = \"v1\"", "version = \"@@VERSION@@\""),
    ("widgets", "@@PLURAL@@"),
    ("Widget", "@@KIND@@"),
    ("widget", "@@KIND_LOWER@@"),
];
