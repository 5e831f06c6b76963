//! The CRDs are generated from the Rust types: the chart's (`chart/crds/`,
//! and `chart/conversion/` for those of more than one version) are checked
//! by `tests/chart_generated.rs`; the driver's own here.

use std::collections::BTreeSet;
use std::path::PathBuf;

#[test]
fn checked_in_crds_match_the_rust_types() {
    let generated = metahook::crds::driver_files().expect("CRDs serialise");
    matches_dir(
        "driver/crds",
        generated,
        "crds --driver --out-dir driver/crds",
    );
}

/// `dir` holds exactly the `generated` files, as generated.
fn matches_dir(dir_name: &str, generated: Vec<(String, String)>, command: &str) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(dir_name);
    for (name, yaml) in &generated {
        let checked_in = std::fs::read_to_string(dir.join(name)).unwrap_or_default();
        assert!(
            checked_in == *yaml,
            "{dir_name}/{name} drifted from the Rust types; run `cargo run -- {command}`"
        );
    }
    let expected: BTreeSet<String> = generated.into_iter().map(|(name, _)| name).collect();
    let present: BTreeSet<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{dir_name}/: {e}"))
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".yaml"))
        .collect();
    assert_eq!(
        present, expected,
        "{dir_name}/ holds files no Rust type generates"
    );
}

#[test]
fn hello_crd_enforces_the_replica_bounds() {
    let crd = metahook_seeds::hello::crds().remove(0);
    let schema = serde_json::to_value(&crd.spec.versions[0].schema).expect("schema");
    let replicas = &schema["openAPIV3Schema"]["properties"]["spec"]["properties"]["replicas"];
    assert_eq!(replicas["maximum"].as_f64(), Some(20.0));
    assert_eq!(replicas["minimum"].as_f64(), Some(0.0));
    assert_eq!(crd.spec.names.plural, "helloes");
    assert_eq!(crd.spec.names.short_names, Some(vec!["hlo".to_owned()]));
    assert!(
        crd.spec.versions[0]
            .subresources
            .as_ref()
            .is_some_and(|s| s.status.is_some()),
        "status subresource"
    );
}

/// The API server refuses a CRD in a group ending in `.k8s.io` or
/// `.kubernetes.io` without the `api-approved.kubernetes.io` annotation
/// (found against the real API server: Foo's `samplecontroller.k8s.io`).
#[test]
fn crds_in_protected_groups_carry_the_approval_annotation() {
    for crd in metahook_seeds::controllers().iter().flat_map(|c| c.crds()) {
        let group = &crd.spec.group;
        if group.ends_with(".k8s.io") || group.ends_with(".kubernetes.io") {
            let annotation = crd
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get("api-approved.kubernetes.io"));
            assert!(
                annotation.is_some_and(|v| !v.is_empty()),
                "{} needs the api-approved.kubernetes.io annotation",
                crd.metadata.name.clone().unwrap_or_default()
            );
        }
    }
}
