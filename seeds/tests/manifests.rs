//! The CompositeController manifests under `metacontroller/` — what
//! Metacontroller reads and the chart renders — are what the controllers'
//! declarations say (`Controller::manifest`): one source, checked.

use metahook_core::Webhooks;
use std::path::Path;

#[test]
fn each_checked_in_manifest_is_its_controllers_declaration() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../metacontroller");
    for controller in metahook_seeds::controllers() {
        let path = dir.join(format!("{}.yaml", controller.name()));
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let checked_in: serde_json::Value =
            serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(
            checked_in,
            controller.manifest(&Webhooks::default()),
            "{} differs from the {} controller's declaration",
            path.display(),
            controller.name()
        );
    }
    let files = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "yaml"))
        })
        .count();
    assert_eq!(
        files,
        metahook_seeds::controllers().len(),
        "a manifest in {} with no controller declared",
        dir.display()
    );
}
