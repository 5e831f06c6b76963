//! Foo's versions: any v1alpha1 spec converted to v1 and back, by the
//! `convert` hook as the API server calls it, is the spec it was.

use metahook_core::HookKind;
use metahook_seeds::foo::{self, FooSpec};
use metahook_testkit::now;
use proptest::prelude::*;
use serde_json::{Value, json};

/// The objects of `review`, converted to `desired` by Foo's hook.
fn convert(desired: &str, objects: Vec<Value>) -> Vec<Value> {
    let review = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "request": {"uid": "u-1", "desiredAPIVersion": desired, "objects": objects},
    });
    let hook = foo::controller()
        .hook(HookKind::Convert)
        .expect("a convert hook");
    let answer = hook(review.to_string().as_bytes(), now()).expect("an answer");
    let mut answer: Value = serde_json::from_slice(&answer).expect("JSON");
    assert_eq!(
        answer["response"]["result"]["status"], "Success",
        "{answer}"
    );
    match answer["response"]["convertedObjects"].take() {
        Value::Array(objects) => objects,
        other => panic!("convertedObjects is {other}"),
    }
}

fn spec() -> impl Strategy<Value = FooSpec> {
    // Any name, valid or not: conversion never checks, it moves.
    (".{0,40}", proptest::option::of(any::<i32>())).prop_map(|(deployment_name, replicas)| {
        FooSpec {
            deployment_name,
            replicas,
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn v1alpha1_to_v1_and_back_is_the_identity(spec in spec(), available in any::<i32>()) {
        let object = json!({
            "apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo",
            "metadata": {"name": "example-foo", "namespace": "default", "uid": "u"},
            "spec": spec,
            "status": {"availableReplicas": available, "conditions": []},
        });
        let v1 = convert("samplecontroller.k8s.io/v1", vec![object.clone()]);
        prop_assert_eq!(&v1[0]["spec"]["deployment"]["name"], &json!(spec.deployment_name));
        prop_assert_eq!(&v1[0]["metadata"], &object["metadata"]);
        let back = convert("samplecontroller.k8s.io/v1alpha1", v1);
        prop_assert_eq!(&back[0], &object);
        // The same through the types alone.
        let through: FooSpec = foo::v1::FooSpec::from(spec.clone()).into();
        prop_assert_eq!(through, spec);
    }
}
