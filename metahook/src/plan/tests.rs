use super::output::{Format, Printer};
use super::summary::{Tally, Verdict};
use metahook_driver::observe::live::ParentPlan;
use metahook_driver::observe::records::{FieldChange, Step};
use serde_json::json;

fn step(op: &'static str, kind: Option<&str>, name: Option<&str>) -> Step {
    Step {
        op,
        kind: kind.map(str::to_owned),
        namespace: name.map(|_| "shop".to_owned()),
        name: name.map(str::to_owned),
        changed: Vec::new(),
        detail: None,
    }
}

fn change(path: &str, from: serde_json::Value, to: serde_json::Value) -> FieldChange {
    FieldChange {
        path: path.to_owned(),
        from,
        to,
    }
}

fn parent(name: &str, steps: Vec<Step>, failure: Option<&str>) -> ParentPlan {
    ParentPlan {
        controller: "hello".to_owned(),
        kind: "Hello".to_owned(),
        namespace: Some("shop".to_owned()),
        name: name.to_owned(),
        hook: Some("sync"),
        steps,
        failure: failure.map(str::to_owned),
    }
}

/// One parent of each outcome: left alone (a read only), scaled, new, and
/// refused by its hook.
fn plans() -> Vec<ParentPlan> {
    let scaled = vec![
        Step {
            changed: vec![change("spec.replicas", json!(2), json!(5))],
            ..step("apply", Some("Deployment"), Some("web"))
        },
        Step {
            changed: vec![change(
                "status.conditions",
                json!([{"type": "Ready", "status": "True"}]),
                json!([{"type": "Ready", "status": "False"}]),
            )],
            ..step("writeStatus", None, None)
        },
        Step {
            detail: Some("Normal Updated".to_owned()),
            ..step("event", None, None)
        },
    ];
    let new = vec![
        step("addFinalizer", None, None),
        Step {
            detail: Some("create".to_owned()),
            ..step("apply", Some("Deployment"), Some("api"))
        },
        Step {
            detail: Some("not desired".to_owned()),
            ..step("delete", Some("Deployment"), Some("old"))
        },
    ];
    vec![
        parent("quiet", vec![step("verifyParent", None, None)], None),
        parent("web", scaled, None),
        parent("api", new, None),
        parent(
            "broken",
            Vec::new(),
            Some("the sync hook failed: spec.replicas: 100 is over 10"),
        ),
    ]
}

/// The plan printed as `plan --live` prints it, with its summary.
fn printed(format: Format, plans: &[ParentPlan]) -> String {
    let mut out = Vec::new();
    let mut printer = Printer::begin(&mut out, format).unwrap();
    let mut tally = Tally::default();
    for plan in plans {
        tally.add(plan);
        printer.parent(plan).unwrap();
    }
    let skipped = "bluegreen: spec.parentResource is not served (no such resource); \
                   the driver would wait for it";
    printer.end(&tally.finish(&[skipped.to_owned()])).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn the_summary_counts_parents_by_outcome_and_operations_by_kind_and_field() {
    let mut tally = Tally::default();
    for plan in plans() {
        tally.add(&plan);
    }
    let summary = tally.finish(&[]);
    assert_eq!(
        (
            summary.parents,
            summary.unchanged,
            summary.changed,
            summary.failed
        ),
        (4, 1, 2, 1)
    );
    let ops: Vec<(&str, &str, usize)> = summary
        .operations
        .iter()
        .map(|o| (o.op.as_str(), o.kind.as_str(), o.count))
        .collect();
    // A read is not an operation; status and finalizer are the parent's.
    assert_eq!(
        ops,
        [
            ("addFinalizer", "Hello", 1),
            ("apply", "Deployment", 2),
            ("delete", "Deployment", 1),
            ("event", "Hello", 1),
            ("writeStatus", "Hello", 1),
        ]
    );
    assert_eq!(
        summary.operations[1].fields,
        [("spec.replicas".to_owned(), 1)].into()
    );
}

#[test]
fn the_exit_code_says_failure_over_change_over_nothing() {
    let verdict = |plans: &[ParentPlan]| {
        let mut tally = Tally::default();
        plans.iter().for_each(|p| tally.add(p));
        tally.finish(&[]).verdict()
    };
    let all = plans();
    assert_eq!(verdict(&all), Verdict::Failures(1));
    assert_eq!(verdict(&all[..3]), Verdict::Changes(2));
    // A parent whose plan only reads changes nothing.
    assert_eq!(verdict(&all[..1]), Verdict::NoChanges);
    assert_eq!(verdict(&[]), Verdict::NoChanges);
}

#[test]
fn text_shows_each_changed_or_failed_parent_then_the_summary() {
    insta::assert_snapshot!(printed(Format::Text, &plans()));
}

#[test]
fn text_of_a_plan_without_changes_says_so() {
    let text = printed(Format::Text, &plans()[..1]);
    assert!(
        text.starts_with("No changes: 1 parent, each as the driver would leave it.\n"),
        "{text}"
    );
}

#[test]
fn json_holds_the_same_as_one_document() {
    let text = printed(Format::Json, &plans());
    let document: serde_json::Value = serde_json::from_str(&text).unwrap();
    // The parent left alone is counted, not listed.
    let names: Vec<&str> = document["parents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["web", "api", "broken"]);
    insta::assert_json_snapshot!(document);
}

#[test]
fn json_of_no_parents_is_a_document_too() {
    let text = printed(Format::Json, &[]);
    let document: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(document["parents"], json!([]));
    assert_eq!(document["summary"]["parents"], 0);
}

/// `plan --live` parsed from `args` after `plan`.
fn plan_args(args: &[&str]) -> crate::cli::PlanArgs {
    use clap::Parser;
    let cli =
        crate::cli::Cli::try_parse_from(["metahook", "plan", "--live"].iter().chain(args)).unwrap();
    match cli.command {
        Some(crate::cli::Command::Plan(args)) => args,
        other => panic!("not plan: {other:?}"),
    }
}

#[test]
fn with_controllers_the_directory_s_manifests_are_planned_not_the_binary_s() {
    let dir = std::env::temp_dir().join(format!("metahook-plan-dir-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("propagation.yaml"),
        r#"
apiVersion: metacontroller.k8s.io/v1alpha1
kind: CompositeController
metadata: {name: propagation}
spec:
  parentResource: {apiVersion: examples.metacontroller.io/v1alpha1, resource: configmappropagations}
  childResources: [{apiVersion: v1, resource: configmaps}]
  hooks:
    sync: {webhook: {url: "http://127.0.0.1:1/sync"}}
"#,
    )
    .unwrap();
    let path = dir.to_str().unwrap();
    let seeds = metahook_seeds::controllers();
    // Resolved before anything connects, as `drive` resolves them: the
    // names are the directory's (the binary holds hello, hikawa and foo),
    // and its webhook, whose path no hook of the binary answers, is kept
    // as a URL to call (in the process, it would be refused as missing).
    let refused = super::run(
        &plan_args(&["--controllers", path, "--controller", "hello"]),
        seeds,
    )
    .unwrap_err();
    assert!(
        matches!(&refused, super::PlanError::UnknownController(name, known)
            if name == "hello" && known == "propagation"),
        "{refused:?}"
    );
    // Without, the binary's own, called in the process.
    let refused = super::run(&plan_args(&["--controller", "propagation"]), seeds).unwrap_err();
    assert!(
        matches!(&refused, super::PlanError::UnknownController(_, known)
            if known.contains("hello")),
        "{refused:?}"
    );
    // A manifest that is not one fails before anything connects.
    std::fs::write(dir.join("broken.yaml"), "kind: CompositeController\n").unwrap();
    let refused = super::run(&plan_args(&["--controllers", path]), seeds).unwrap_err();
    assert!(
        matches!(refused, super::PlanError::Prepare(_)),
        "a bad manifest fails before anything connects: {refused:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
