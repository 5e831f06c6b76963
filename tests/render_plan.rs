//! `metahook render --plan`: the bundled driver's plan for every fixture's
//! answer, snapshotted (`tests/snapshots/render_plan__*.snap`; read each
//! before accepting it), and the command line's own output.

use metahook_core::HookKind;
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
        let answer = metahook::render::render(
            metahook_seeds::controllers(),
            &fixture.controller,
            hook,
            &body,
            Some(now()),
        )
        .expect("the hook answers");
        let plan = metahook::render::plan(
            metahook_seeds::controllers(),
            &fixture.controller,
            hook,
            &body,
            &answer,
        )
        .unwrap_or_else(|e| panic!("{}: {}", fixture.snapshot_name(), metahook::error_chain(&e)));
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
    let err = metahook::render::plan(
        metahook_seeds::controllers(),
        "foo",
        "customize",
        b"{}",
        b"{}",
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("--plan takes sync or finalize"),
        "{err}"
    );
}

/// A directory of its own under the system's temporary one.
fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("metahook-render-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    dir
}

/// A Widget controller (a CRD of the user's, not built in) owning
/// ConfigMaps, its sync webhook at `url`, children updated `strategy`.
const WIDGETS: &str = r#"apiVersion: metacontroller.k8s.io/v1alpha1
kind: CompositeController
metadata:
  name: widgets
spec:
  generateSelector: true
  parentResource:
    apiVersion: example.com/v1
    resource: widgets
  childResources:
    - apiVersion: v1
      resource: configmaps
      updateStrategy:
        method: STRATEGY
  hooks:
    sync:
      webhook:
        url: URL
"#;

/// A request for one Widget with no ConfigMap yet.
const WIDGET_REQUEST: &str = r#"{
  "controller": {},
  "parent": {"apiVersion": "example.com/v1", "kind": "Widget",
             "metadata": {"name": "w", "namespace": "ns", "uid": "u-1", "generation": 1},
             "spec": {"color": "blue"}},
  "children": {"ConfigMap.v1": {}},
  "related": {}
}"#;

const WIDGET_ANSWER: &str = r#"{"status": {"painted": true}, "children": [
  {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "w-paint"}, "data": {"color": "blue"}}
]}"#;

/// Answers one POST with `answer` and hands back the request's body.
fn one_shot_hook(answer: &'static str) -> (u16, std::thread::JoinHandle<String>) {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let port = listener.local_addr().expect("an address").port();
    listener
        .set_nonblocking(true)
        .expect("a non-blocking listener");
    let server = std::thread::spawn(move || {
        // Bounded: a render that never calls leaves an empty request.
        let Some(stream) = (0..600).find_map(|_| match listener.accept() {
            Ok((stream, _)) => Some(stream),
            Err(_) => {
                std::thread::sleep(std::time::Duration::from_millis(100));
                None
            }
        }) else {
            return String::new();
        };
        stream.set_nonblocking(false).expect("a blocking stream");
        let mut reader = BufReader::new(stream);
        let mut length = 0;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).expect("a header line");
            let line = line.trim_end().to_ascii_lowercase();
            if line.is_empty() {
                break;
            }
            if let Some(value) = line.strip_prefix("content-length:") {
                length = value.trim().parse().expect("a length");
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).expect("the body");
        let mut stream = reader.into_inner();
        write!(
            stream,
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
            answer.len()
        )
        .expect("answering");
        String::from_utf8(body).expect("UTF-8")
    });
    (port, server)
}

fn widgets_dir(name: &str, url: &str, strategy: &str) -> std::path::PathBuf {
    let dir = scratch(name);
    let manifest = WIDGETS.replace("URL", url).replace("STRATEGY", strategy);
    std::fs::write(dir.join("widgets.yaml"), manifest).expect("the manifest");
    std::fs::write(dir.join("request.json"), WIDGET_REQUEST).expect("the request");
    dir
}

fn metahook(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_metahook"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("metahook runs")
}

#[test]
fn a_webhook_of_your_own_is_asked_and_its_answer_planned() {
    for plan in [false, true] {
        let (port, hook) = one_shot_hook(WIDGET_ANSWER);
        let dir = widgets_dir(
            &format!("own-{plan}"),
            &format!("http://127.0.0.1:{port}/sync"),
            "InPlace",
        );
        let (controllers, request) = (dir.to_string_lossy(), dir.join("request.json"));
        let mut args = vec!["render", "--controllers", &controllers, "widgets", "sync"];
        let request = request.to_string_lossy();
        args.push(&request);
        if plan {
            args.push("--plan");
        }
        let out = metahook(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // The hook got the request as the file holds it.
        let sent = hook.join().expect("the hook thread");
        let sent: serde_json::Value = serde_json::from_str(&sent)
            .unwrap_or_else(|e| panic!("the hook got no JSON ({e}): {sent:?}"));
        let expected: serde_json::Value = serde_json::from_str(WIDGET_REQUEST).expect("JSON");
        assert_eq!(sent, expected);
        let printed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        if !plan {
            let answer: serde_json::Value = serde_json::from_str(WIDGET_ANSWER).expect("JSON");
            assert_eq!(printed, answer, "render prints the hook's answer");
            continue;
        }
        let steps = printed["plan"].as_array().expect("a plan");
        assert!(
            steps
                .iter()
                .any(|s| s["op"] == "apply" && s["kind"] == "ConfigMap" && s["name"] == "w-paint"),
            "the ConfigMap is created: {printed:#}"
        );
        assert!(
            printed["status"]
                .as_array()
                .expect("status changes")
                .iter()
                .any(|c| c["path"] == "painted" && c["to"] == true),
            "the status change is shown: {printed:#}"
        );
    }
}

#[test]
fn an_answer_from_a_file_is_planned_for_a_built_in_controller() {
    let dir = scratch("response");
    let request: serde_json::Value = serde_json::from_slice(
        &std::fs::read(format!(
            "{}/fixtures/hello/scale-up.json",
            env!("CARGO_MANIFEST_DIR")
        ))
        .expect("the fixture"),
    )
    .expect("JSON");
    // The fixture's own answer, but 7 replicas.
    let body = serde_json::to_vec(&request).expect("JSON");
    let answer = metahook::render::render(
        metahook_seeds::controllers(),
        "hello",
        "sync",
        &body,
        Some(now()),
    )
    .expect("an answer");
    let mut answer: serde_json::Value = serde_json::from_slice(&answer).expect("JSON");
    answer["children"][0]["spec"]["replicas"] = 7.into();
    let file = dir.join("answer.json");
    std::fs::write(&file, answer.to_string()).expect("the answer");
    let out = metahook(&[
        "render",
        "--plan",
        "hello",
        "sync",
        "fixtures/hello/scale-up.json",
        "--response",
        &file.to_string_lossy(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(
        plan["plan"][0]["changed"],
        serde_json::json!([{"path": "spec.replicas", "from": 2, "to": 7}]),
        "{plan:#}"
    );
}

#[test]
fn a_rolling_controller_is_not_planned() {
    let dir = widgets_dir("rolling", "http://127.0.0.1:9/sync", "RollingRecreate");
    let answer = dir.join("answer.json");
    std::fs::write(&answer, WIDGET_ANSWER).expect("the answer");
    let out = metahook(&[
        "render",
        "--plan",
        "--controllers",
        &dir.to_string_lossy(),
        "widgets",
        "sync",
        &dir.join("request.json").to_string_lossy(),
        "--response",
        &answer.to_string_lossy(),
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("widgets rolls its children"), "{err}");
}

#[test]
fn a_finalize_request_without_the_finalizer_says_why_nothing_is_deleted() {
    let body = std::fs::read("fixtures/hello/finalize-with-child.json").expect("the fixture");
    let mut request: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
    // As a hand-written request would be: no finalizer on the parent.
    request["parent"]["metadata"]
        .as_object_mut()
        .expect("metadata")
        .remove("finalizers");
    let body = serde_json::to_vec(&request).expect("JSON");
    let plan_of = |body: &[u8]| -> serde_json::Value {
        let controllers = metahook_seeds::controllers;
        let answer =
            metahook::render::render(controllers(), "hello", "finalize", body, Some(now()))
                .expect("the hook answers");
        let plan = metahook::render::plan(controllers(), "hello", "finalize", body, &answer)
            .expect("a plan");
        serde_json::from_slice(&plan).expect("JSON")
    };
    let plan = plan_of(&body);
    assert!(
        plan["plan"]
            .as_array()
            .expect("ops")
            .iter()
            .all(|op| op["op"] != "delete"),
        "{plan:#}"
    );
    let note = plan["notes"][0].as_str().expect("a note");
    assert!(
        note.contains("metacontroller.io/compositecontroller-hello"),
        "{note}"
    );
    assert!(note.contains("garbage collector"), "{note}");
    // With the finalizer, the delete is planned and nothing needs saying.
    let with =
        plan_of(&std::fs::read("fixtures/hello/finalize-with-child.json").expect("the fixture"));
    assert!(with.get("notes").is_none(), "{with:#}");
}
