//! The declaration says what the example's CompositeController says (its
//! `controller.json`: the manifest of Metacontroller's example, without
//! its webhooks), which is what the engines run. One test for every
//! example that has such a manifest: each includes this file as a module
//! of its own (`#[path]`). It lives in a directory of its own, since a
//! file directly in `examples/` would be a Cargo example of the root
//! package.

#[test]
fn the_declaration_is_the_examples_composite_controller() {
    let written = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/controller.json"));
    let written = serde_json::from_str(written).expect("JSON");
    let disagreements = metahook_testing::disagreements(&crate::controller(), &written);
    assert!(disagreements.is_empty(), "{disagreements:#?}");
}
