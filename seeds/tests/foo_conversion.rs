//! Foo's versions: any Foo converted to the other version and back, by the
//! `convert` hook as the API server calls it, is the Foo it was, metadata
//! included (metahook-testing's round-trip check).

use metahook_seeds::foo::{self, Foo, FooSpec, FooStatus, v1};
use metahook_testing::conversion::{RoundTrip, round_trips};
use metahook_testing::proptest::prelude::*;

/// Any name, valid or not: conversion never checks, it moves.
fn names() -> impl Strategy<Value = String> {
    ".{0,40}"
}

#[test]
fn v1alpha1_to_v1_and_back_is_the_identity() {
    let specs =
        (names(), prop::option::of(any::<i32>())).prop_map(|(deployment_name, replicas)| FooSpec {
            deployment_name,
            replicas,
        });
    let statuses = any::<i32>().prop_map(|available_replicas| FooStatus {
        available_replicas,
        ..FooStatus::default()
    });
    RoundTrip::<Foo, v1::Foo>::new(&foo::controller(), specs)
        .statuses(statuses)
        .check()
        .unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn v1_to_v1alpha1_and_back_is_the_identity() {
    let specs =
        (names(), prop::option::of(any::<i32>())).prop_map(|(name, replicas)| v1::FooSpec {
            deployment: v1::FooDeployment { name, replicas },
        });
    round_trips::<v1::Foo, Foo>(&foo::controller(), specs).unwrap_or_else(|e| panic!("{e}"));
}
