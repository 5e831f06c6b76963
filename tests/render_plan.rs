//! `metahook render --plan`: the bundled driver's plan for every fixture's
//! answer, snapshotted (`tests/snapshots/render_plan__*.snap`; read each
//! before accepting it), and the command line's own output.

use metahook_hooks::HookKind;
use metahook_testkit::{NOW, fixtures, now};

fn pretty(json: &[u8]) -> String {
    let value: serde_json::Value = serde_json::from_slice(json).expect("JSON");
    serde_json::to_string_pretty(&value).expect("JSON")
}

#[test]
fn every_fixture_has_a_plan() {
    for fixture in fixtures() {
        if fixture.hook == HookKind::Customize {
            continue;
        }
        let body = fixture.body();
        let hook = fixture.hook.as_str();
        let answer = metahook::render::render(&fixture.controller, hook, &body, Some(now()))
            .expect("the hook answers");
        let plan = metahook::render::plan(&fixture.controller, hook, &body, &answer)
            .unwrap_or_else(|e| {
                panic!("{}: {}", fixture.snapshot_name(), metahook::error_chain(&e))
            });
        insta::assert_snapshot!(fixture.snapshot_name(), pretty(&plan));
    }
}

#[test]
fn scaling_up_changes_replicas_from_2_to_5() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_metahook"))
        .args([
            "render",
            "--plan",
            "hello",
            "sync",
            "fixtures/hello/scale-up.json",
            "--now",
            NOW,
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("metahook runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let apply = &plan["plan"][0];
    assert_eq!(apply["op"], "apply");
    assert_eq!(apply["kind"], "Deployment");
    assert_eq!(
        apply["changed"],
        serde_json::json!([{"path": "spec.replicas", "from": 2, "to": 5}])
    );
}

#[test]
fn a_customize_answer_is_not_a_plan() {
    let err = metahook::render::plan("foo", "customize", b"{}", b"{}").unwrap_err();
    assert!(
        err.to_string().contains("--plan takes sync or finalize"),
        "{err}"
    );
}
