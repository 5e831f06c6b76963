//! The chart's alerts and dashboard against what metahook exports: a
//! `metahook drive` calling a `metahook serve` over HTTP reconciles Hellos
//! on the real control plane, both processes' `/metrics` are scraped, and
//! `metricnames` (tests/monitoring/, on Prometheus' own PromQL parser)
//! fails on any metric or label a rule or a panel names that neither
//! process exports. A family with labels shows only once it has a sample,
//! so the refusals are made to happen: a body over the hook server's bound,
//! and a client certificate from a stranger CA on a `serve` over mutual TLS
//! (scraped too: the same binary, as the chart runs it with TLS on).

use crate::hooks_tls::serve_mtls_at;
use crate::support::*;
use metahook_testkit::certs::Ca;
use metahook_testkit::https::HttpsClient;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What the dashboard takes from other exporters (cAdvisor through the
/// kubelet, and kube-state-metrics): memory against the limit.
const EXTERNAL: &str = "container_memory_working_set_bytes,kube_pod_container_resource_limits";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_metric_and_label_the_alerts_and_dashboard_name_is_exported() {
    let (path, client) = cluster_with_crds().await;
    let hooks = start(&path, &["serve", "--max-body-bytes", "65536"]).await;
    let dir = hello_manifest_at(hooks.port, None, "metahook-e2e-monitoring");
    let driver = start_drive(&path, &dir).await;
    let ns = namespace(&client, "e2e-monitoring").await;
    let names = names("watched", 2);
    create_hellos(&client, &ns, &names, 0).await;
    wait_for("the Hellos observed through HTTP hooks", || async {
        all_observed(&client, &ns, &names).await.then_some(())
    })
    .await;
    // A body over --max-body-bytes: refused, counted by reason.
    let refused = post_oversized(hooks.port, "/hello/sync", 70_000);
    assert_eq!(refused, Some(413), "an oversized hook request");

    let scrapes = std::env::temp_dir().join(format!("metahook-e2e-scrapes-{}", std::process::id()));
    std::fs::create_dir_all(&scrapes).expect("a temporary directory");
    let tls = tls_refusals_scrape(&path, &scrapes).await;
    assert!(
        tls.contains("metahook_hook_tls_refusals_total{reason=\"unknown_ca\"}"),
        "the stranger's handshake is counted:\n{tls}"
    );
    let mut files = vec![scrapes.join("serve-tls.txt")];
    std::fs::write(&files[0], &tls).expect("writing a scrape");
    for (name, port) in [("serve", hooks.port), ("drive", driver.port)] {
        let Some((200, text)) = http("GET", &format!("127.0.0.1:{port}"), "/metrics") else {
            panic!("{name}: /metrics did not answer 200");
        };
        assert!(
            name != "serve"
                || text
                    .contains("metahook_hook_requests_refused_total{reason=\"PayloadTooLarge\"}"),
            "the refusal is counted:\n{text}"
        );
        let file = scrapes.join(format!("{name}.txt"));
        std::fs::write(&file, &text).expect("writing a scrape");
        files.push(file);
    }

    let tools = monitoring_tools();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(tools.join("metricnames"))
        .arg("-rules")
        .arg(root.join("chart/monitoring/alerts.yaml"))
        .arg("-dashboard")
        .arg(root.join("chart/monitoring/dashboard.json"))
        .arg("-external")
        .arg(EXTERNAL)
        .args(&files)
        .output()
        .expect("running metricnames");
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    say(&said);
    assert!(
        out.status.success(),
        "names the binary does not export:\n{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains(", 0 problems"), "{said}");
    drop_namespace(&client, &ns).await;
    let _ = std::fs::remove_dir_all(&scrapes);
}

/// `metahook serve` over mutual TLS, one handshake with a client
/// certificate of another CA refused, and its `/metrics` (which needs no
/// client certificate) as text.
async fn tls_refusals_scrape(kubeconfig: &Path, scratch: &Path) -> String {
    let ca = Ca::new("metahook-e2e-monitoring");
    let stranger = Ca::new("stranger").client("metacontroller");
    let serving = ca.server(&["127.0.0.1", "localhost"]);
    let server = serve_mtls_at(kubeconfig, &scratch.join("tls"), &ca.pem, &serving).await;
    let addr = format!("127.0.0.1:{}", server.port)
        .parse()
        .expect("an address");
    let anonymous = HttpsClient::new(&ca.pem, None);
    let refused = HttpsClient::new(&ca.pem, Some(&stranger)).post(addr, "/hello/sync", b"{}", "");
    assert!(refused.is_err(), "a stranger's certificate is refused");
    wait_for("the refusal counted", || async {
        let answer = anonymous.get(addr, "/metrics").ok()?;
        let text = String::from_utf8_lossy(&answer.body).into_owned();
        text.contains("metahook_hook_tls_refusals_total{")
            .then_some(text)
    })
    .await
}

/// tests/monitoring/build.sh: promtool and metricnames, built (or found
/// up to date) under target/monitoring/.
pub(crate) fn monitoring_tools() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(root.join("tests/monitoring/build.sh"))
        .output()
        .expect("running tests/monitoring/build.sh");
    assert!(
        out.status.success(),
        "tests/monitoring/build.sh:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

/// POSTs a request that declares `size` bytes of body and sends none: the
/// hook server refuses it on its head (sending the body too would race the
/// server's close: unread bytes make it a reset, which can swallow the
/// answer). Its status.
fn post_oversized(port: u16, path: &str, size: usize) -> Option<u16> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(std::time::Duration::from_secs(60)))
        .ok()?;
    let head = format!(
        "POST {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {size}\r\n\r\n"
    );
    s.write_all(head.as_bytes()).ok()?;
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    text.split_whitespace().nth(1)?.parse().ok()
}
