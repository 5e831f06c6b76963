//! The round-trip check of conversions, on a controller whose conversions
//! keep everything and on one whose `From` drops a field on purpose: the
//! check must fail on the second, naming that field.

use kube::CustomResource;
use metahook_core::test_types::{Note, NoteSpec, NoteStatus, v2};
use metahook_core::{Answer, Controller, Request};
use metahook_testing::conversion::{RoundTrip, RoundTripError, round_trips};
use metahook_testing::proptest::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

fn notes() -> Controller {
    Controller::composite::<Note>("note")
        .sync(|_: &Request<Note>| Answer::new(NoteStatus::default()))
        .version::<v2::Note>()
        .build()
}

fn note_specs() -> impl Strategy<Value = NoteSpec> {
    any::<String>().prop_map(|text| NoteSpec { text })
}

#[test]
fn conversions_that_keep_everything_round_trip_both_ways_with_statuses() {
    round_trips::<Note, v2::Note>(&notes(), note_specs()).unwrap_or_else(|e| panic!("{e}"));
    RoundTrip::<v2::Note, Note>::new(
        &notes(),
        any::<String>().prop_map(|text| v2::NoteSpec {
            body: v2::Body { text },
        }),
    )
    .statuses(
        (any::<usize>(), prop::option::of("[a-z]{0,8}")).prop_map(|(copies, last_seen)| {
            NoteStatus {
                copies,
                last_seen,
                ..NoteStatus::default()
            }
        }),
    )
    .cases(64)
    .check()
    .unwrap_or_else(|e| panic!("{e}"));
}

/// The hub of a lossy pair: a Gadget has a size and a colour.
#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[kube(
    group = "example.com",
    version = "v1",
    kind = "Gadget",
    namespaced,
    status = "GadgetStatus"
)]
pub struct GadgetSpec {
    size: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    colour: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
pub struct GadgetStatus {
    #[serde(default)]
    built: u32,
}

/// v2 forgot the colour.
#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[kube(
    group = "example.com",
    version = "v2",
    kind = "Gadget",
    root = "GadgetV2",
    namespaced,
    status = "GadgetStatus"
)]
pub struct GadgetV2Spec {
    size: u32,
}

impl From<GadgetV2Spec> for GadgetSpec {
    fn from(v2: GadgetV2Spec) -> Self {
        GadgetSpec {
            size: v2.size,
            colour: None,
        }
    }
}

impl From<GadgetSpec> for GadgetV2Spec {
    fn from(hub: GadgetSpec) -> Self {
        GadgetV2Spec { size: hub.size }
    }
}

fn gadgets() -> Controller {
    Controller::composite::<Gadget>("gadget")
        .sync(|_: &Request<Gadget>| Answer::new(GadgetStatus::default()))
        .version::<GadgetV2>()
        .build()
}

#[test]
fn a_conversion_that_drops_a_field_fails_naming_it_shrunk_to_the_smallest_object() {
    let specs = (any::<u32>(), prop::option::of("[a-z]{1,12}"))
        .prop_map(|(size, colour)| GadgetSpec { size, colour });
    let error = round_trips::<Gadget, GadgetV2>(&gadgets(), specs)
        .expect_err("v2 drops the colour: the round trip must fail");
    assert_eq!(error.fields(), ["spec.colour"], "{error}");
    let RoundTripError::Changed(changed) = &error else {
        panic!("not a change: {error}");
    };
    // Shrunk: the smallest size, the shortest colour.
    assert_eq!(
        changed.sent["spec"],
        serde_json::json!({"size": 0, "colour": "a"})
    );
    assert_eq!(changed.fields[0].before, Some(serde_json::json!("a")));
    assert_eq!(changed.fields[0].after, None);
    let message = error.to_string();
    assert!(
        message.starts_with(
            "example.com/v1 → example.com/v2 → example.com/v1 changed spec.colour: \"a\" → absent"
        ),
        "{message}"
    );
    assert!(
        message.contains("at example.com/v2: spec {\"size\":0}"),
        "{message}"
    );
    // The other way round nothing is lost: v2 holds less than v1.
    round_trips::<GadgetV2, Gadget>(
        &gadgets(),
        any::<u32>().prop_map(|size| GadgetV2Spec { size }),
    )
    .unwrap_or_else(|e| panic!("{e}"));
}

/// Converts by panicking on a large size, as a `From` with an `unwrap`
/// would.
#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[kube(
    group = "example.com",
    version = "v3",
    kind = "Gadget",
    root = "GadgetV3",
    namespaced,
    status = "GadgetStatus"
)]
pub struct GadgetV3Spec {
    size: u16,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    colour: Option<String>,
}

impl From<GadgetV3Spec> for GadgetSpec {
    fn from(v3: GadgetV3Spec) -> Self {
        GadgetSpec {
            size: v3.size.into(),
            colour: v3.colour,
        }
    }
}

impl From<GadgetSpec> for GadgetV3Spec {
    fn from(hub: GadgetSpec) -> Self {
        GadgetV3Spec {
            size: u16::try_from(hub.size).expect("a size that fits"),
            colour: hub.colour,
        }
    }
}

#[test]
fn a_conversion_that_panics_is_not_converted_and_says_why_for_the_smallest_object() {
    let gadgets = Controller::composite::<Gadget>("gadget")
        .sync(|_: &Request<Gadget>| Answer::new(GadgetStatus::default()))
        .version::<GadgetV3>()
        .build();
    let specs = any::<u32>().prop_map(|size| GadgetSpec { size, colour: None });
    let error = round_trips::<Gadget, GadgetV3>(&gadgets, specs).expect_err("a size over u16");
    let RoundTripError::NotConverted {
        at, why, object, ..
    } = &error
    else {
        panic!("not a failed conversion: {error}");
    };
    assert_eq!(*at, "the way there");
    assert!(why.contains("a size that fits"), "{why}");
    assert_eq!(
        object["spec"]["size"], 65_536,
        "shrunk to the smallest that fails"
    );
}

#[test]
fn a_controller_without_versions_has_nothing_to_round_trip() {
    let single = Controller::composite::<Note>("note")
        .sync(|_: &Request<Note>| Answer::new(NoteStatus::default()))
        .build();
    let error = round_trips::<Note, v2::Note>(&single, note_specs()).expect_err("no hook");
    assert!(
        matches!(&error, RoundTripError::NoConvertHook { controller } if controller == "note"),
        "{error}"
    );
}
