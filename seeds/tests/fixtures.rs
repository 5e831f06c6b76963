//! Every fixture through its hook, at a pinned time; the responses are
//! insta snapshots in `tests/snapshots/` (read each before accepting it).

use metahook_testkit::{every_fixture, fixtures, now, pretty};

#[test]
fn every_fixture_matches_its_snapshot() {
    let all = every_fixture();
    assert!(!all.is_empty(), "no fixtures found");
    for fixture in all {
        let controller = metahook_seeds::controller(&fixture.controller)
            .unwrap_or_else(|| panic!("fixtures/{} names no controller", fixture.controller));
        let handler = controller.hook(fixture.hook).unwrap_or_else(|| {
            panic!(
                "{}: {} has no {} hook",
                fixture.path.display(),
                fixture.controller,
                fixture.hook
            )
        });
        let response = handler(&fixture.body(), now())
            .unwrap_or_else(|e| panic!("{}: {e}", fixture.path.display()));
        insta::assert_snapshot!(fixture.snapshot_name(), pretty(&response));
    }
}

#[test]
fn every_controller_has_fixtures_for_every_hook() {
    let all = every_fixture();
    for controller in metahook_seeds::controllers() {
        for hook in controller.hook_kinds() {
            assert!(
                all.iter()
                    .any(|f| f.controller == controller.name() && f.hook == hook),
                "no fixture for {} {hook}",
                controller.name()
            );
        }
    }
}

#[test]
fn responses_are_byte_stable() {
    for fixture in fixtures() {
        let Some(handler) =
            metahook_seeds::controller(&fixture.controller).and_then(|c| c.hook(fixture.hook))
        else {
            continue;
        };
        let body = fixture.body();
        assert_eq!(
            handler(&body, now()).ok(),
            handler(&body, now()).ok(),
            "{}",
            fixture.path.display()
        );
    }
}

/// Metacontroller decodes a v2 hook's response strictly: any other top-level
/// key fails the reconcile. Sync and finalize always send a full status and
/// the full child list.
#[test]
fn responses_carry_only_the_protocol_keys() {
    for fixture in fixtures() {
        let Some(handler) =
            metahook_seeds::controller(&fixture.controller).and_then(|c| c.hook(fixture.hook))
        else {
            continue;
        };
        let response: serde_json::Value =
            serde_json::from_slice(&handler(&fixture.body(), now()).expect("answers"))
                .expect("JSON");
        let object = response.as_object().expect("an object");
        let allowed: &[&str] = match fixture.hook {
            metahook_core::HookKind::Customize => &["relatedResources"],
            _ => &["status", "children", "resyncAfterSeconds", "finalized"],
        };
        for key in object.keys() {
            assert!(
                allowed.contains(&key.as_str()),
                "{}: unexpected key {key}",
                fixture.path.display()
            );
        }
        if fixture.hook != metahook_core::HookKind::Customize {
            assert!(object["status"].is_object(), "{}", fixture.path.display());
            assert!(object["children"].is_array(), "{}", fixture.path.display());
        }
    }
}
