//! The `metahook` binary's offline commands: `render` and `crds`.

use metahook_testkit::{NOW, every_fixture, root, snapshot};
use std::io::Write;
use std::process::{Command, Output, Stdio};

fn metahook(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_metahook"))
        .args(args)
        .current_dir(root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("metahook runs");
    if let Some(input) = stdin {
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(input)
            .expect("write stdin");
    }
    drop(child.stdin.take());
    child.wait_with_output().expect("metahook finishes")
}

#[test]
fn render_prints_what_the_service_answers() {
    // The API server's reviews too: `render foo convert FILE` is the
    // offline conversion webhook, `render hello validate FILE` admission.
    for fixture in every_fixture() {
        let path = fixture.path.to_string_lossy().into_owned();
        let out = metahook(
            &[
                "render",
                &fixture.controller,
                fixture.hook.as_str(),
                &path,
                "--now",
                NOW,
            ],
            None,
        );
        assert!(
            out.status.success(),
            "{path}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8(out.stdout).expect("UTF-8");
        assert_eq!(stdout.trim_end(), snapshot(&fixture), "{path}");
    }
}

#[test]
fn render_reads_yaml_from_stdin_and_prints_compact_json() {
    let yaml = br#"
parent:
  apiVersion: fraim.co.jp/v1
  kind: Hello
  metadata: {name: web, namespace: demo, generation: 1}
  spec: {replicas: 3}
children:
  Deployment.apps/v1: {}
"#;
    let out = metahook(
        &["render", "hello", "sync", "-", "--now", NOW, "--compact"],
        Some(yaml),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).expect("UTF-8");
    assert_eq!(stdout.lines().count(), 1, "compact is one line");
    let response: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(response["children"][0]["metadata"]["name"], "web");
    assert_eq!(response["children"][0]["metadata"]["namespace"], "demo");
    assert_eq!(response["children"][0]["spec"]["replicas"], 3);
}

#[test]
fn render_explains_what_is_wrong() {
    let out = metahook(&["render", "nope", "sync", "fixtures/hello/new.json"], None);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("unknown controller \"nope\"") && stderr.contains("hello"),
        "{stderr}"
    );

    let out = metahook(&["render", "hello", "sync", "-"], Some(b"{\"parent\": {,"));
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("malformed JSON at line 1 column 13"),
        "{stderr}"
    );

    let out = metahook(
        &["render", "hello", "sync", "-"],
        Some(b"{\"parent\": 1, \"children\": {}}"),
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("at `parent`: invalid type: integer `1`, expected a Kubernetes object"),
        "{stderr}"
    );

    let out = metahook(&["render", "hello", "sync", "no/such/file.json"], None);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("reading no/such/file.json failed"));
}

#[test]
fn crds_prints_every_crd_of_the_chart() {
    let out = metahook(&["crds"], None);
    assert!(out.status.success());
    let printed = String::from_utf8(out.stdout).expect("UTF-8");
    let files = metahook::crds::files(metahook_seeds::controllers()).expect("CRDs");
    let joined = files
        .iter()
        .map(|(_, y)| y.as_str())
        .collect::<Vec<_>>()
        .join("---\n");
    assert_eq!(printed, joined);
    for (name, yaml) in files {
        // A CRD of more than one version is the chart's template
        // (chart/conversion/); `crds` prints its stored version only.
        match std::fs::read_to_string(root().join("chart/crds").join(&name)) {
            Ok(checked_in) => assert_eq!(checked_in, yaml, "chart/crds/{name}"),
            Err(_) => assert!(
                root().join("chart/conversion").join(&name).is_file(),
                "{name} is in neither chart/crds/ nor chart/conversion/"
            ),
        }
    }
}

#[test]
fn serve_answers_then_stops_cleanly_on_sigterm() {
    use std::io::{BufRead, BufReader, Read};
    let mut child = Command::new(env!("CARGO_BIN_EXE_metahook"))
        .args(["--listen", "127.0.0.1:0", "--log-format", "json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("metahook serves");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let addr = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|line| {
            let event: serde_json::Value = serde_json::from_str(&line).ok()?;
            (event["message"] == "serving hooks")
                .then(|| event["addr"].as_str().map(str::to_owned))?
        })
        .expect("the service logs its address");
    let mut stream = std::net::TcpStream::connect(&addr).expect("connect");
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .expect("write");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("read");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");

    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    let status = child.wait().expect("metahook exits");
    assert!(status.success(), "exit after SIGTERM: {status:?}");
}

#[test]
fn leader_election_timings_that_could_let_two_lead_are_refused_at_start() {
    // A renew deadline as long as the term: a standby could take over
    // while the leader still writes. Refused before anything connects.
    let out = metahook(
        &[
            "drive",
            "--leader-election",
            "--leader-election-lease-duration",
            "10s",
            "--leader-election-renew-deadline",
            "10s",
        ],
        None,
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("renew deadline (10s) < lease duration (10s"),
        "{stderr}"
    );
}

#[test]
fn help_names_the_controllers_and_their_hooks() {
    let out = metahook(&["--help"], None);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for line in [
        "hello (sync, finalize, validate)",
        "hikawa (sync, validate)",
        "foo (customize, sync, validate, default, convert)",
    ] {
        assert!(help.contains(line), "{line:?} not in:\n{help}");
    }
}
